import pytest

from pyspark_kafka_upgrade._adapters.kafka.rate_limit import (
    limit_end_offsets,
)


def test_budget_is_split_by_backlog() -> None:
    start = {"a": 0, "b": 0}
    assert limit_end_offsets(8, start, {"a": 30, "b": 10}) == {"a": 6, "b": 2}


def test_small_partitions_are_not_starved_so_the_total_may_exceed_the_budget() -> None:
    # 10 * 1/1001 < 1 rounds up; 10 * 1000/1001 = 9.99 rounds down: 10 in total.
    limited = limit_end_offsets(10, {"big": 0, "small": 5}, {"big": 1000, "small": 6})
    assert limited == {"big": 9, "small": 6}
    # Three backlogs that each get a third of one record: each gets one.
    assert limit_end_offsets(1, {0: 0, 1: 0, 2: 0}, {0: 5, 1: 5, 2: 5}) == {0: 1, 1: 1, 2: 1}


def test_a_budget_above_the_backlog_reads_everything() -> None:
    assert limit_end_offsets(1000, {"a": 3, "b": 4}, {"a": 10, "b": 4}) == {"a": 10, "b": 4}


def test_partitions_without_backlog_keep_their_end_even_if_it_is_behind() -> None:
    # b went backwards (data loss, reported elsewhere): it keeps its end, a gets it all.
    assert limit_end_offsets(4, {"a": 0, "b": 9}, {"a": 100, "b": 2}) == {"a": 4, "b": 2}


def test_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        limit_end_offsets(0, {"a": 0}, {"a": 1})
