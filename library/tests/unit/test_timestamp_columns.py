"""``timestamp_columns.timestamps_ms`` against the mirror's own ``_timestamp_us``, string by string.

Columns of one shape take the numpy path; strays within them (another shape, a field out of
range, a character that is no digit) and small or mixed groups go to ``_timestamp_us``.
Every answer must be ``_timestamp_us``'s floored to the millisecond, None where it is None.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import example, given, settings
from hypothesis import strategies as st

from pyspark_kafka_upgrade._application.upgrade.timestamp_columns import timestamps_ms
from pyspark_kafka_upgrade._core.query.event_parser import _timestamp_us


def expected(texts: Sequence[str]) -> list[int | None]:
    return [None if us is None else us // 1000 for us in map(_timestamp_us, texts)]


_SHAPES = st.sampled_from(
    [
        "{date}T{time}Z",
        "{date}T{time}",
        "{date}T{time}.{fraction}Z",
        "{date}T{time}.{fraction}",
        "{date}T{time}.{fraction}{offset}",
        "{date}T{time}{offset}",
    ]
)


@st.composite
def shaped(draw: st.DrawFn, shape: str, fraction_digits: int, wild: bool) -> str:
    """A string of ``shape``; with ``wild``, its fields may leave their ranges."""
    year = draw(st.integers(0, 9999))
    month = draw(st.integers(0, 19) if wild else st.integers(1, 12))
    day = draw(st.integers(0, 39) if wild else st.integers(1, 31))
    hour = draw(st.integers(0, 29) if wild else st.integers(0, 23))
    minute = draw(st.integers(0, 69) if wild else st.integers(0, 59))
    second = draw(st.integers(0, 69) if wild else st.integers(0, 59))
    fraction = "".join(
        draw(
            st.lists(
                st.sampled_from("0123456789"), min_size=fraction_digits, max_size=fraction_digits
            )
        )
    )
    sign = draw(st.sampled_from("+-"))
    offset_hour = draw(st.integers(0, 23) if wild else st.integers(0, 18))
    offset_minute = draw(st.integers(0, 69) if wild else st.sampled_from([0, 30, 59]))
    return shape.format(
        date=f"{year:04d}-{month:02d}-{day:02d}",
        time=f"{hour:02d}:{minute:02d}:{second:02d}",
        fraction=fraction,
        offset=f"{sign}{offset_hour:02d}:{offset_minute:02d}",
    )


@st.composite
def columns(draw: st.DrawFn) -> list[str]:
    """Mostly one shape, long enough for numpy; some strings of another shape, mangled, or
    of another length among them."""
    shape = draw(_SHAPES)
    digits = draw(st.integers(1, 11))
    wild = draw(st.booleans())
    texts = draw(st.lists(shaped(shape, digits, wild), min_size=0, max_size=60))
    for _ in range(draw(st.integers(0, 4))):
        if not texts:
            break
        where = draw(st.integers(0, len(texts) - 1))
        action = draw(st.integers(0, 4))
        text = texts[where]
        if action == 0:  # one character replaced, by anything
            at = draw(st.integers(0, max(len(text) - 1, 0)))
            texts[where] = text[:at] + draw(st.characters()) + text[at + 1 :]
        elif action == 1:  # another shape, maybe of the same length
            texts[where] = draw(shaped(draw(_SHAPES), draw(st.integers(1, 11)), True))
        elif action == 2:
            texts[where] = draw(st.text(alphabet="0123456789-:T.Z+ tz", max_size=30))
        elif action == 3:  # a separator swapped for another
            at = draw(st.sampled_from([4, 7, 10, 13, 16]))
            texts[where] = text[:at] + draw(st.sampled_from("-:T.Z+ t")) + text[at + 1 :]
        else:
            texts.insert(where, draw(st.text(max_size=30)))
    return texts


@settings(max_examples=400, deadline=None)
@given(texts=columns())
@example(texts=["2026-11-22T10:15:00.250Z"] * 20 + ["2026-11-22T10:15:00.25Z"])
@example(
    texts=["2024-02-29T23:59:59.999999999-18:00"] * 17 + ["2023-02-29T23:59:59.999999999-18:00"]
)
@example(texts=["0000-01-01T00:00:00+18:00"] * 16 + ["9999-12-31T23:59:59-18:00"] * 16)
@example(texts=["2026-11-22T10:15:00Z"] * 16 + ["2026-11-22T10:15:00\u0661"] * 2)
@example(texts=["1969-12-31T23:59:59.9995Z"] * 16)
def test_every_string_gets_the_mirrors_answer(texts: list[str]) -> None:
    assert timestamps_ms(texts) == expected(texts)


def test_a_column_of_one_shape_is_exact() -> None:
    texts = [
        f"2026-11-22T10:{minute:02d}:{second:02d}.250Z"
        for minute in range(60)
        for second in range(60)
    ]
    assert timestamps_ms(texts) == expected(texts)
    assert timestamps_ms(texts)[:2] == [1_795_341_600_250, 1_795_341_601_250]
