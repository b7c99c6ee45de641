"""``pykafka``: a Kafka streaming source on PySpark's Python Data Source API.

It behaves like Spark's built-in ``kafka`` source (same schema, options, offsets JSON and
data-loss rules) but needs only pip packages: confluent-kafka instead of the connector jars.
Register it with ``spark.dataSource.register(PyKafkaDataSource)``, then
``spark.readStream.format("pykafka")``.

PySpark versions: on 4.2 and later Spark passes ``maxOffsetsPerTrigger`` in as a read limit,
and Trigger.AvailableNow runs as many rate-limited batches as it takes. On 4.0 and 4.1 the
source applies ``maxOffsetsPerTrigger`` itself, and AvailableNow runs a single batch, which
that limit also bounds.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import astuple, dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.types import StructType

from pyspark_kafka_upgrade._adapters.kafka.data_loss import report_data_loss
from pyspark_kafka_upgrade._adapters.kafka.initial_offsets import load_or_resolve
from pyspark_kafka_upgrade._adapters.kafka.kafka_errors import SourceOptionError
from pyspark_kafka_upgrade._adapters.kafka.kafka_metadata import KafkaMetadata
from pyspark_kafka_upgrade._adapters.kafka.options import (
    ENDING_OFFSETS,
    STARTING_OFFSETS,
    SourceOptions,
    StartFromOffsets,
    parse_options,
)
from pyspark_kafka_upgrade._adapters.kafka.partition_reader import read_range
from pyspark_kafka_upgrade._adapters.kafka.ranges import OffsetRange, plan_ranges
from pyspark_kafka_upgrade._adapters.kafka.rate_limit import limit_end_offsets
from pyspark_kafka_upgrade._adapters.kafka.schema import spark_schema
from pyspark_kafka_upgrade._adapters.kafka.starting_offsets import resolve_starting_offsets
from pyspark_kafka_upgrade._domain.values.offsets import (
    Offsets,
    PartitionKey,
    flatten,
    offsets_from_json_object,
    offsets_to_json_object,
    unflatten,
)

if TYPE_CHECKING:
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
else:
    try:
        from pyspark.sql.streaming.datasource import (
            ReadAllAvailable,
            ReadLimit,
            ReadMaxRows,
            SupportsTriggerAvailableNow,
        )
    except ImportError:  # PySpark 4.0 and 4.1: no read limits; latestOffset gets no arguments.
        ReadAllAvailable = ReadLimit = ReadMaxRows = None

        class SupportsTriggerAvailableNow:
            """Stands in for the 4.2 mixin, so the reader's bases are the same on 4.0."""


NAME = "pykafka"
logger = logging.getLogger(__name__)
_METADATA_TIMEOUT_S = 30.0


class PyKafkaDataSource(DataSource):
    """The ``pykafka`` format; options are those of the built-in ``kafka`` source."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return spark_schema(self._options().include_headers)

    def streamReader(self, schema: StructType) -> PyKafkaStreamReader:
        options = self._options()
        if options.ending is not None:
            raise SourceOptionError(ENDING_OFFSETS, "ends a batch read; a stream has no end")
        return PyKafkaStreamReader(options)

    def reader(self, schema: StructType) -> PyKafkaBatchReader:
        return PyKafkaBatchReader(self._options())

    def _options(self) -> SourceOptions:
        return parse_options(self.options)


@dataclass(frozen=True)
class RangePartition(OffsetRange, InputPartition):
    """An offset range as Spark's Python data source API takes a partition: one task."""

    @classmethod
    def of(cls, offsets: OffsetRange) -> RangePartition:
        return cls(*astuple(offsets))


class PyKafkaBatchReader(DataSourceReader):
    """A batch read of exact offsets, ``startingOffsets`` to ``endingOffsets`` (JSON).

    `verify` reads the source back with it. Offsets retention deleted are reported as the
    stream reports them (``failOnDataLoss``); the rest is read.
    """

    def __init__(self, options: SourceOptions) -> None:
        starting = options.starting
        if not isinstance(starting, StartFromOffsets) or options.ending is None:
            raise SourceOptionError(
                STARTING_OFFSETS,
                "a batch read of this source takes exact JSON offsets in both "
                f"{STARTING_OFFSETS} and {ENDING_OFFSETS}",
            )
        begin = flatten(starting.offsets)
        if any(offset < 0 for offset in begin.values()):
            raise SourceOptionError(
                STARTING_OFFSETS, "a batch read of this source starts only at exact offsets"
            )
        self._options = options
        self._begin = begin
        self._end = flatten(options.ending)

    def partitions(self) -> Sequence[InputPartition]:
        return [
            RangePartition(topic, partition, self._begin[(topic, partition)], end)
            for (topic, partition), end in sorted(self._end.items())
            if (topic, partition) in self._begin and end > self._begin[(topic, partition)]
        ]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, OffsetRange):
            raise TypeError(f"expected an OffsetRange, got {type(partition).__name__}")
        return read_range(self._options, partition)


class PyKafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans batches on the driver and reads them on executors.

    The driver-side methods run in one long-lived Python worker per query, so the state kept
    here lasts between calls. Spark pickles this object to executors for ``read``; it holds
    no client until a driver-side method first needs one.
    """

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._metadata: KafkaMetadata | None = None
        self._initial: Offsets | None = None
        # Where the next batch starts, for PySpark < 4.2, whose latestOffset() gets no start.
        self._position: Offsets | None = None
        self._latest: Offsets | None = None
        self._available_now_end: Offsets | None = None

    # ---- driver side ------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        # Spark asks twice on a fresh run, and again after a crash before the first commit:
        # resolve once, and persist, so every answer is the same.
        return offsets_to_json_object(self._initial_offsets())

    def latestOffset(
        self, start: dict[str, Any] | None = None, limit: ReadLimit | None = None
    ) -> dict[str, Any]:
        """The end of the next batch: the brokers' latest offsets, capped by the read limit.

        4.2+ passes ``start`` and ``limit``; older versions call it without arguments.
        """
        if start is None:
            begin = self._position if self._position is not None else self._initial_offsets()
        else:
            begin = offsets_from_json_object(start)
        latest = self._available_now_end
        if latest is None:
            latest = self._fetch_latest()
        self._latest = latest
        max_records = self._max_records(limit)
        if max_records is None:
            return offsets_to_json_object(latest)
        begin_flat = flatten(begin)
        latest_flat = flatten(latest)
        added = [key for key in latest_flat if key not in begin_flat]
        from_offsets = {**begin_flat, **self._client().earliest(added)}
        # Partitions that vanished or whose earliest is unknown keep their latest offsets;
        # partitions() reports the loss.
        known = {key: value for key, value in latest_flat.items() if key in from_offsets}
        limited = limit_end_offsets(max_records, from_offsets, known)
        return offsets_to_json_object(unflatten({**latest_flat, **limited}))

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self._options.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit is not None else ReadAllAvailable()

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return None if self._latest is None else offsets_to_json_object(self._latest)

    def prepareForTriggerAvailableNow(self) -> None:
        # AvailableNow reads what exists now and nothing that arrives later.
        self._available_now_end = self._fetch_latest()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        end_offsets = offsets_from_json_object(end)
        # A restart begins with partitions(X, X) at the checkpointed offset.
        self._position = end_offsets
        fail = self._options.fail_on_data_loss
        ranges = plan_ranges(
            offsets_from_json_object(start),
            end_offsets,
            earliest=lambda keys: self._client().earliest(keys),
            report_data_loss=partial(report_data_loss, fail=fail),
        )
        return [RangePartition.of(offsets) for offsets in ranges]

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: the source never commits offsets to Kafka, as the built-in."""

    def stop(self) -> None:
        if self._metadata is not None:
            self._metadata.close()
            self._metadata = None

    # ---- executor side ----------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, OffsetRange):
            raise TypeError(f"expected an OffsetRange, got {type(partition).__name__}")
        return read_range(self._options, partition)

    # ---- helpers ----------------------------------------------------------------------------

    def _client(self) -> KafkaMetadata:
        if self._metadata is None:
            self._metadata = KafkaMetadata(
                self._options.client_config,
                group_id=f"{self._options.group_id_prefix}-{uuid.uuid4().hex}",
                timeout_s=_METADATA_TIMEOUT_S,
            )
        return self._metadata

    def _subscribed_partitions(self) -> list[PartitionKey]:
        return self._client().partitions(self._options.topics, self._options.pattern)

    def _resolve_initial(self) -> Offsets:
        partitions = self._subscribed_partitions()
        return resolve_starting_offsets(self._options.starting, partitions, self._client())

    def _initial_offsets(self) -> Offsets:
        if self._initial is None:
            location = self._options.initial_offsets_location
            if location is None:
                logger.warning(
                    "option initialOffsetsLocation is not set: if the driver dies before the "
                    "first batch commits, the restart resolves the starting offsets again and "
                    "may skip records"
                )
                self._initial = self._resolve_initial()
            else:
                self._initial = load_or_resolve(location, self._resolve_initial)
        if self._position is None:
            self._position = self._initial
        return self._initial

    def _fetch_latest(self) -> Offsets:
        return unflatten(self._client().latest(self._subscribed_partitions()))

    def _max_records(self, limit: ReadLimit | None) -> int | None:
        if limit is None:  # PySpark < 4.2: Spark does not apply the option, so the source does
            return self._options.max_offsets_per_trigger
        if ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            return int(limit.max_rows)
        return None
