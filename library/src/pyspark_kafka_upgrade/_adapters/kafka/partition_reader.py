"""Read one offset range: as Arrow record batches on an executor, or as plain lists for a scan.

Each task creates its own consumer and closes it: the reader object is pickled to executors,
so it must not hold a client. The consumer is assigned the range's partition directly and
never joins a group or commits. Reading stops at the range's end by offset, by the
consumer's position, or by the end-of-partition event, so control records and compaction
gaps at the end of a range never make it wait.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, Protocol, TypeVar, cast

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from pyspark_kafka_upgrade._adapters.kafka.data_loss import report_data_loss
from pyspark_kafka_upgrade._adapters.kafka.kafka_errors import KafkaBrokerError
from pyspark_kafka_upgrade._adapters.kafka.kafka_metadata import create_consumer
from pyspark_kafka_upgrade._adapters.kafka.options import SourceOptions
from pyspark_kafka_upgrade._adapters.kafka.ranges import OffsetRange
from pyspark_kafka_upgrade._adapters.kafka.schema import TIMESTAMP_TYPE_IDS, arrow_schema

# Records per consume() call and at most per Arrow batch: large enough that per-call costs
# vanish, small enough to keep a batch's memory modest.
BATCH_RECORDS = 10_000
_POLL_SLICE_S = 0.5
# librdkafka stops fetching for fetch.queue.backoff.ms (1 s by default) whenever its local
# queue holds more than queued.min.messages (100,000): a range longer than that was read at
# half speed, the reader idle once its buffer ran dry. A short pause still lets the queue
# drain (100,000 records take this reader about 0.3 s) without a busy fetch loop.
FETCH_QUEUE_BACKOFF_MS = 20
_OUT_OF_RANGE = {KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE}
_ERROR, _OFFSET, _VALUE, _TIMESTAMP = (
    Message.error,
    Message.offset,
    Message.value,
    Message.timestamp,
)


def read_range(options: SourceOptions, offsets: OffsetRange) -> Iterator[Any]:
    """Yield ``pyarrow.RecordBatch``es holding exactly the records of ``offsets``."""
    consumer = _consumer(options)
    try:
        reader = _RangeReader(consumer, options, offsets)
        yield from map(reader.arrow_batch, reader.batches(_Columns))
    finally:
        consumer.close()


class Records(NamedTuple):
    """Some records of a range, in offset order: what a scan reads of each."""

    offsets: list[int]
    values: list[bytes | None]
    timestamps_ms: list[int]


def read_records(
    options: SourceOptions, offsets: OffsetRange, *, timestamps: bool = True
) -> Iterator[Records]:
    """The records ``read_range`` yields, at most ``BATCH_RECORDS`` at a time, as lists;
    without ``timestamps``, their ``timestamps_ms`` list is left empty.

    For a scan that wants a few fields of each record in Python: building Arrow columns
    only to unpack them again cost a third of its reading.
    """
    consumer = _consumer(options)
    fields = _Fields if timestamps else _FieldsWithoutTime
    try:
        for batch in _RangeReader(consumer, options, offsets).batches(fields):
            yield Records(batch.offsets, batch.values, batch.timestamps_ms)
    finally:
        consumer.close()


def _consumer(options: SourceOptions) -> Consumer:
    return create_consumer(
        {
            "group.id": f"{options.group_id_prefix}-executor-{uuid.uuid4().hex}",
            "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,
            **options.client_config,
            # An offset that is gone must surface as an error, never as a silent jump.
            "auto.offset.reset": "error",
            "enable.partition.eof": True,
        }
    )


class _Pending(Protocol):
    offsets: list[int]

    def add_all(
        self, messages: list[Message[Any, Any]], offsets: list[int], with_headers: bool
    ) -> None: ...


_P = TypeVar("_P", bound=_Pending)


class _RangeReader:
    def __init__(self, consumer: Consumer, options: SourceOptions, offsets: OffsetRange) -> None:
        self._consumer = consumer
        self._options = options
        self._range = offsets
        self._partition = TopicPartition(offsets.topic, offsets.partition)
        self._next = offsets.start
        self._schema = arrow_schema(options.include_headers)

    def batches(self, pending_batch: Callable[[], _P]) -> Iterator[_P]:
        """Batches of at most ``BATCH_RECORDS`` records, filled from consume() results."""
        end = self._range.end
        self._assign(self._next)
        timeout_s = self._options.poll_timeout_ms / 1000
        last_progress = time.monotonic()
        pending = pending_batch()
        while self._next < end:
            before = self._next
            messages = self._consumer.consume(
                num_messages=min(BATCH_RECORDS, end - self._next), timeout=_POLL_SLICE_S
            )
            if not self._take_all(messages, end, pending):
                self._take_one_by_one(messages, end, pending)
            if self._next < end:
                # Control records and compacted-away offsets have no message; the position
                # moves past them all the same.
                position = self._consumer.position([self._partition])[0].offset
                self._next = max(self._next, min(position, end))
            if len(pending.offsets) >= BATCH_RECORDS:
                yield pending
                pending = pending_batch()
            if self._next > before:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > timeout_s:
                raise KafkaBrokerError(
                    f"{self._where()}: no record at or after offset {self._next} arrived "
                    f"within {timeout_s:g} s (kafkaConsumer.pollTimeoutMs), though offsets up to "
                    f"{end - 1} were listed"
                )
        if pending.offsets:
            yield pending

    def _take_all(self, messages: list[Message[Any, Any]], end: int, pending: _Pending) -> bool:
        """Take a whole consume() result at once when it holds only records of the range.

        That is nearly always the case, and column-wise comprehensions cost far less per
        record than one Python loop iteration with its checks; this is the read's hot path.
        """
        # Message's methods mapped, not called in a Python loop: this runs for every record.
        if not messages or any(map(_ERROR, messages)):
            return False
        offsets = list(map(_OFFSET, messages))
        first, last = offsets[0], offsets[-1]
        # Offsets within a partition only grow, so the ends bound every offset between.
        if first is None or last is None or first < self._next or last >= end:
            return False
        pending.add_all(messages, cast(list[int], offsets), self._options.include_headers)
        self._next = last + 1
        return True

    def _take_one_by_one(
        self, messages: list[Message[Any, Any]], end: int, pending: _Pending
    ) -> None:
        for message in messages:
            error = message.error()
            if error is not None:
                self._on_error(error, message)
                continue
            offset = message.offset()
            if offset is None or offset < self._next:
                continue  # a record from before a reassignment
            if offset >= end:
                self._next = end
                break
            pending.add_all([message], [offset], self._options.include_headers)
            self._next = offset + 1

    def _assign(self, offset: int) -> None:
        self._consumer.assign([TopicPartition(self._range.topic, self._range.partition, offset)])

    def _on_error(self, error: KafkaError, message: Message[Any, Any]) -> None:
        code = error.code()
        if code == KafkaError._PARTITION_EOF:
            reached = message.offset()
            if reached is not None and reached >= self._range.end:
                self._next = self._range.end
            else:
                self._check_still_there()
        elif code in _OUT_OF_RANGE:
            self._check_still_there()
        elif code == KafkaError.GROUP_AUTHORIZATION_FAILED:
            # librdkafka looks for the group's coordinator whenever a group.id is set, even
            # for assigned partitions; this reader never commits, so it needs no group ACL.
            return
        elif error.fatal() or not error.retriable():
            raise KafkaBrokerError(f"{self._where()}: reading failed: {error.str()}")

    def _check_still_there(self) -> None:
        """Compare the range with what the partition holds now; report what is gone."""
        try:
            low, high = self._consumer.get_watermark_offsets(
                self._partition, timeout=self._options.poll_timeout_ms / 1000, cached=False
            )
        except KafkaException as error:
            raise KafkaBrokerError(f"{self._where()}: cannot look up offsets: {error}") from None
        end = self._range.end
        fail = self._options.fail_on_data_loss
        if low > self._next:
            report_data_loss(
                f"{self._where()}: cannot fetch offsets {self._next} to {min(low, end) - 1}; "
                f"the earliest available offset is {low}",
                fail=fail,
            )
            self._next = min(low, end)
            if self._next < end:
                self._assign(self._next)
        elif high < end:
            report_data_loss(
                f"{self._where()}: cannot fetch offsets {max(self._next, high)} to {end - 1}; "
                f"the partition now ends at offset {high}",
                fail=fail,
            )
            self._next = end

    def arrow_batch(self, pending: _Columns) -> Any:
        count = len(pending.offsets)
        columns = [
            pa.array(pending.keys, pa.binary()),
            pa.array(pending.values, pa.binary()),
            pa.repeat(pa.scalar(self._range.topic, pa.string()), count),
            pa.repeat(pa.scalar(self._range.partition, pa.int32()), count),
            pa.array(pending.offsets, pa.int64()),
            pa.array(pending.timestamps_ms, pa.timestamp("ms", tz="UTC")).cast(
                pa.timestamp("us", tz="UTC")
            ),
            pa.array(
                [TIMESTAMP_TYPE_IDS.get(kind, -1) for kind in pending.timestamp_types], pa.int32()
            ),
        ]
        if self._options.include_headers:
            columns.append(pa.array(pending.headers, self._schema.field("headers").type))
        return pa.RecordBatch.from_arrays(columns, schema=self._schema)

    def _where(self) -> str:
        return f"topic {self._range.topic!r} partition {self._range.partition}"


class _Columns:
    """One Arrow batch's columns, filled column by column from consume() results."""

    __slots__ = ("headers", "keys", "offsets", "timestamp_types", "timestamps_ms", "values")

    def __init__(self) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.timestamps_ms: list[int] = []
        self.timestamp_types: list[int] = []
        self.headers: list[Any] = []

    def add_all(
        self, messages: list[Message[Any, Any]], offsets: list[int], with_headers: bool
    ) -> None:
        self.keys += [message.key() for message in messages]
        self.values += [message.value() for message in messages]
        self.offsets += offsets
        stamps = [message.timestamp() for message in messages]
        self.timestamp_types += [kind for kind, _ in stamps]
        self.timestamps_ms += [ms for _, ms in stamps]
        if with_headers:
            # The built-in source gives null, not an empty list, for a record without headers.
            self.headers += [message.headers() or None for message in messages]


class _Fields:
    """A scan's batch: offsets, values and timestamps, filled from consume() results."""

    __slots__ = ("offsets", "timestamps_ms", "values")

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.values: list[bytes | None] = []
        self.timestamps_ms: list[int] = []

    def add_all(
        self, messages: list[Message[Any, Any]], offsets: list[int], with_headers: bool
    ) -> None:
        self.offsets += offsets
        self.values += map(_VALUE, messages)
        self.timestamps_ms += [ms for _, ms in map(_TIMESTAMP, messages)]


class _FieldsWithoutTime(_Fields):
    """A scan's batch without timestamps: a scan whose event time is in the payload."""

    __slots__ = ()

    def add_all(
        self, messages: list[Message[Any, Any]], offsets: list[int], with_headers: bool
    ) -> None:
        self.offsets += offsets
        self.values += map(_VALUE, messages)
