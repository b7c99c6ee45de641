import pytest

from pyspark_kafka_upgrade._domain.values.validation import (
    InvalidIntervalError,
    InvalidTopicNameError,
    WindowSpec,
    check_kafka_topic,
    parse_interval_ms,
    window_spec,
)


@pytest.mark.parametrize(
    ("text", "expected_ms"),
    [
        ("10 minutes", 600_000),
        ("1 minute", 60_000),
        ("1 hour 30 minutes", 5_400_000),
        ("INTERVAL 2 Seconds", 2_000),
        ("250 milliseconds", 250),
        ("1 week", 604_800_000),
        ("0 seconds", 0),
        ("-1 minute", -60_000),
    ],
)
def test_parses_spark_intervals(text: str, expected_ms: int) -> None:
    assert parse_interval_ms(text) == expected_ms


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("", "empty"),
        ("10", "<number> <unit>"),
        ("10 minuts", "unknown unit 'minuts'"),
        ("ten minutes", "<number> <unit>"),
        ("10 minutes and", "<number> <unit>"),
        ("1 month", "no fixed length"),
        ("5 microseconds", "finer than a millisecond"),
        ("\u0661\u0660 minutes", "<number> <unit>"),
        ("10\u00a0minutes", "<number> <unit>"),
        ("1 hour\u00a030 minutes", "<number> <unit>"),
        ("99999999999999999999 days", "longer than Spark can represent"),
    ],
)
def test_refuses_what_is_not_an_interval(text: str, complaint: str) -> None:
    with pytest.raises(InvalidIntervalError, match=complaint):
        parse_interval_ms(text)


def test_window_spec_without_slide_is_tumbling() -> None:
    spec = window_spec("10 minutes", "", "5 minutes")
    assert spec == WindowSpec(duration_ms=600_000, slide_ms=600_000, watermark_delay_ms=300_000)
    assert spec.is_tumbling


def test_window_spec_with_slide_is_sliding() -> None:
    spec = window_spec("10 minutes", "5 minutes", "0 seconds")
    assert (spec.slide_ms, spec.is_tumbling) == (300_000, False)


@pytest.mark.parametrize(
    ("duration", "slide", "delay", "field", "complaint"),
    [
        ("0 seconds", "", "1 minute", "duration", "must be positive"),
        ("10 minutes", "20 minutes", "1 minute", "slide", "longer than the window"),
        ("10 minutes", "0 minutes", "1 minute", "slide", "must be positive"),
        ("10 minutes", "", "-1 minute", "watermark_delay", "must not be negative"),
        ("10 minutes", "", "soon", "watermark_delay", "not a Spark interval"),
    ],
)
def test_window_spec_names_the_field_at_fault(
    duration: str, slide: str, delay: str, field: str, complaint: str
) -> None:
    with pytest.raises(InvalidIntervalError, match=complaint) as caught:
        window_spec(duration, slide, delay)
    assert caught.value.field == field


@pytest.mark.parametrize("name", ["page-views", "a", "A.b_c-9", "x" * 249])
def test_accepts_legal_topic_names(name: str) -> None:
    assert check_kafka_topic(name) == name


@pytest.mark.parametrize(
    ("name", "complaint"),
    [
        ("", "1 to 249"),
        ("x" * 250, "1 to 249"),
        (".", "reserved"),
        ("..", "reserved"),
        ("page views", "may only contain"),
        ("pages/views", "may only contain"),
        ("vüe", "may only contain"),
    ],
)
def test_refuses_illegal_topic_names(name: str, complaint: str) -> None:
    with pytest.raises(InvalidTopicNameError, match=complaint):
        check_kafka_topic(name)
