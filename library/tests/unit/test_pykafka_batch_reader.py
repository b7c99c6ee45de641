"""The pykafka source's batch read, which `verify` reads the source back with: exact offsets
from ``startingOffsets`` to ``endingOffsets``, one range per partition; no broker needed to
plan it."""

from __future__ import annotations

import pickle

import pytest
from pyspark.sql.datasource import InputPartition

from pyspark_kafka_upgrade._adapters.kafka.kafka_errors import SourceOptionError
from pyspark_kafka_upgrade._adapters.kafka.options import parse_options
from pyspark_kafka_upgrade._adapters.kafka.pykafka import (
    PyKafkaBatchReader,
    PyKafkaDataSource,
    PyKafkaStreamReader,
    RangePartition,
)
from pyspark_kafka_upgrade._adapters.kafka.ranges import OffsetRange

REQUIRED = {"kafka.bootstrap.servers": "broker:9092", "subscribe": "views,clicks"}


def raw(**options: str) -> dict[str, str]:
    # Spark lower-cases option names before a Python data source sees them.
    return {key.lower(): value for key, value in {**REQUIRED, **options}.items()}


def reader(**options: str) -> PyKafkaBatchReader:
    return PyKafkaBatchReader(parse_options(raw(**options)))


def test_one_range_per_partition_with_records_to_read() -> None:
    batch = reader(
        startingOffsets='{"views":{"0":5,"1":7,"2":0},"clicks":{"0":100}}',
        endingOffsets='{"views":{"0":9,"1":7,"2":3,"3":4},"clicks":{"0":150}}',
    )

    # views 1 has nothing between 7 and 7; views 3 is not in startingOffsets, so not read.
    assert batch.partitions() == [
        RangePartition("clicks", 0, 100, 150),
        RangePartition("views", 0, 5, 9),
        RangePartition("views", 2, 0, 3),
    ]


def test_a_range_is_a_partition_spark_takes_and_sends_to_its_workers() -> None:
    # Spark refuses a partition that is not an InputPartition, and pickles it for the task.
    partition = RangePartition.of(OffsetRange("views", 0, 5, 9))
    assert isinstance(partition, InputPartition)
    assert partition == RangePartition("views", 0, 5, 9)
    assert pickle.loads(pickle.dumps(partition)) == partition


def test_a_partition_only_in_the_starting_offsets_is_not_read() -> None:
    batch = reader(startingOffsets='{"views":{"0":5,"1":7}}', endingOffsets='{"views":{"0":6}}')

    assert batch.partitions() == [RangePartition("views", 0, 5, 6)]


@pytest.mark.parametrize(
    ("options", "option", "complaint"),
    [
        pytest.param(
            {"startingOffsets": "earliest", "endingOffsets": '{"views":{"0":9}}'},
            "startingOffsets",
            "exact JSON offsets in both startingOffsets and endingOffsets",
            id="starting at earliest",
        ),
        pytest.param(
            {"endingOffsets": '{"views":{"0":9}}'},
            "startingOffsets",
            "exact JSON offsets in both startingOffsets and endingOffsets",
            id="no startingOffsets: latest",
        ),
        pytest.param(
            {
                "startingTimestamp": "1700000000000",
                "startingOffsets": '{"views":{"0":5}}',
                "endingOffsets": '{"views":{"0":9}}',
            },
            "startingOffsets",
            "exact JSON offsets in both",
            id="starting at a timestamp",
        ),
        pytest.param(
            {"startingOffsets": '{"views":{"0":5}}'},
            # The message names both options; the error is filed under startingOffsets.
            "startingOffsets",
            "exact JSON offsets in both startingOffsets and endingOffsets",
            id="no endingOffsets",
        ),
        pytest.param(
            {"startingOffsets": '{"views":{"0":-2}}', "endingOffsets": '{"views":{"0":9}}'},
            "startingOffsets",
            "starts only at exact offsets",
            id="-2 in startingOffsets",
        ),
        pytest.param(
            {"startingOffsets": '{"views":{"0":5}}', "endingOffsets": '{"views":{"0":-1}}'},
            "endingOffsets",
            "offset -1 is negative",
            id="-1 in endingOffsets",
        ),
    ],
)
def test_a_batch_read_needs_exact_offsets_at_both_ends(
    options: dict[str, str], option: str, complaint: str
) -> None:
    with pytest.raises(SourceOptionError, match=complaint) as refused:
        reader(**options)

    assert refused.value.option == option


def test_the_data_source_gives_a_batch_reader_of_its_options() -> None:
    source = PyKafkaDataSource(
        raw(startingOffsets='{"views":{"0":5}}', endingOffsets='{"views":{"0":9}}')
    )

    batch = source.reader(source.schema())

    assert isinstance(batch, PyKafkaBatchReader)
    assert batch.partitions() == [RangePartition("views", 0, 5, 9)]


def test_a_stream_refuses_ending_offsets() -> None:
    source = PyKafkaDataSource(
        raw(startingOffsets='{"views":{"0":5}}', endingOffsets='{"views":{"0":9}}')
    )

    with pytest.raises(
        SourceOptionError, match="ends a batch read; a stream has no end"
    ) as refused:
        source.streamReader(source.schema())

    assert refused.value.option == "endingOffsets"


def test_a_stream_without_ending_offsets_still_gets_a_stream_reader() -> None:
    source = PyKafkaDataSource(raw(startingOffsets='{"views":{"0":5}}'))

    # No client is opened until a driver-side method needs one: no broker here.
    assert isinstance(source.streamReader(source.schema()), PyKafkaStreamReader)
