"""Instants as typed on a command line: ISO-8601, UTC unless they say otherwise."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from pyspark_kafka_upgrade._domain.values.time_text import parse_instant

# 2026-11-26 is 20,783 days after 1970-01-01: 56 years of 365 days (20,440), 14 leap days
# (1972 to 2024), and 329 days into 2026 (304 to the end of October, then 25).
MIDNIGHT_UTC = 20_783 * 86_400 * 1_000
NINE_UTC = MIDNIGHT_UTC + 9 * 3_600 * 1_000


@pytest.fixture
def local_time_five_hours_behind(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The machine's own time zone five hours behind UTC (POSIX ``EST+5``, no DST)."""
    monkeypatch.setenv("TZ", "EST+5")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_the_epoch_is_zero() -> None:
    assert parse_instant("1970-01-01T00:00:00Z") == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("2026-11-26T09:00:00Z", NINE_UTC, id="Z"),
        pytest.param("2026-11-26t09:00:00z", NINE_UTC, id="lower-case z"),
        pytest.param("2026-11-26T09:00:00+00:00", NINE_UTC, id="+00:00"),
        pytest.param("2026-11-26T10:00:00+01:00", NINE_UTC, id="+01:00 is an hour ahead"),
        pytest.param("2026-11-26T04:30:00-04:30", NINE_UTC, id="-04:30"),
        pytest.param("2026-11-26T09:00:00", NINE_UTC, id="no offset is UTC"),
        pytest.param("2026-11-26 09:00", NINE_UTC, id="a space, no seconds"),
        pytest.param("2026-11-26T09:00:00.250Z", NINE_UTC + 250, id="milliseconds"),
        pytest.param("  2026-11-26T09:00:00Z\n", NINE_UTC, id="blanks around"),
        pytest.param("2026-11-26", MIDNIGHT_UTC, id="a bare date is midnight UTC"),
    ],
)
def test_iso_8601_instants(text: str, expected: int) -> None:
    assert parse_instant(text) == expected


@pytest.mark.usefixtures("local_time_five_hours_behind")
@pytest.mark.parametrize(
    ("text", "expected"),
    [("2026-11-26T09:00:00", NINE_UTC), ("2026-11-26", MIDNIGHT_UTC)],
)
def test_a_time_without_an_offset_is_utc_whatever_the_machines_zone(
    text: str, expected: int
) -> None:
    assert parse_instant(text) == expected


def test_a_day_is_86_400_000_milliseconds() -> None:
    assert parse_instant("2026-11-27") - parse_instant("2026-11-26") == 86_400_000


@pytest.mark.parametrize(
    "text", ["yesterday", "", "2026-13-01", "2026-11-26T25:00:00Z", "1795683600000", "now"]
)
def test_anything_else_is_refused_with_an_example(text: str) -> None:
    with pytest.raises(ValueError, match="is not an ISO-8601 time") as refused:
        parse_instant(text)

    message = str(refused.value)
    assert message.startswith(repr(text))
    assert "e.g. 2026-11-26T09:00:00Z or 2026-11-26" in message
