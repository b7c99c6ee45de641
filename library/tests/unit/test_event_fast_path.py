"""``event_fast_path`` against ``EventParser.event_time_ms``: the same answer, record by record.

The fast path decodes plain values with orjson and counts keys instead of hooking every
object, and judges whole batches column by column; anything else goes to the mirror. The
records here are built to sit on either side of each of its gates: duplicate keys (with the
same or other whitespace before the colon, nested, in arrays), escapes, NaN and Infinity,
huge and long numbers, floats, nesting, whitespace everywhere JSON allows it and where it
does not, strings holding ``":`` or ``" :`` or starting with a colon, bytes that are not
UTF-8, empty and non-object values, trailing garbage, and each declared field missing, null
or of another type. Batches are either mixed or of one shape (so the column path, and the
column-wise timestamp parse, take them). ``test_event_parser.py`` holds both to Spark.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pyspark_kafka_upgrade._application.upgrade.event_fast_path import FastEventParser
from pyspark_kafka_upgrade._core.query.event_parser import EventParser
from pyspark_kafka_upgrade._domain.records.scans import UNSURE, Unsure
from pyspark_kafka_upgrade._domain.values.project import EventField, EventType
from pyspark_kafka_upgrade._example.events import EVENTS as PAGE_VIEW_EVENTS

LIMIT = 262_144
KAFKA_US = 1_795_000_000_123_000
_PREFIXES: dict[str, EventType] = {
    "s": "string",
    "b": "boolean",
    "i": "int",
    "l": "bigint",
    "d": "double",
    "t": "timestamp",
}
TYPED_EVENTS = tuple(
    EventField(f"{prefix}_{kind}", type_, required=kind == "req")
    for prefix, type_ in _PREFIXES.items()
    for kind in ("req", "opt")
)
# (events, time_source, time_field): the page views and a field of every type, each with
# the payload's time and Kafka's, and an optional time field.
CONFIGS = {
    "events": (PAGE_VIEW_EVENTS, "payload", "event_time"),
    "events-kafka": (PAGE_VIEW_EVENTS, "kafka", "event_time"),
    "typed": (TYPED_EVENTS, "payload", "t_req"),
    "typed-kafka": (TYPED_EVENTS, "kafka", "t_req"),
    "typed-optional-time": (TYPED_EVENTS, "payload", "t_opt"),
}
Record = tuple[bytes | None, int | None]


def parsers(name: str, max_value_bytes: int = LIMIT) -> tuple[EventParser, FastEventParser]:
    events, time_source, time_field = CONFIGS[name]
    mirror = EventParser(
        events=events,
        time_source=time_source,
        time_field=time_field,
        max_value_bytes=max_value_bytes,
    )
    return mirror, FastEventParser(mirror, max_value_bytes)


def assert_same(name: str, records: Sequence[Record], max_value_bytes: int = LIMIT) -> None:
    """The batch and each record on its own get the mirror's answers; with the payload's
    time, the batch gets them without its Kafka timestamps too, as a scan passes it."""
    mirror, fast = parsers(name, max_value_bytes)
    values = [value for value, _ in records]
    stamps = [stamp for _, stamp in records]
    expected = list(map(mirror.event_time_ms, values, stamps))
    assert fast.event_times_ms(values, stamps) == expected
    assert list(map(fast.event_time_ms, values, stamps)) == expected
    if not fast.kafka_time:
        assert fast.event_times_ms(values, [None] * len(values)) == expected


# -- Strategies ----------------------------------------------------------------------------

_DIGITS = "0123456789"


@st.composite
def timestamps(draw: st.DrawFn) -> str:
    """ISO-8601 shapes, mostly valid instants, some out of range or misshapen."""
    if draw(st.integers(0, 15)) == 15:
        return draw(st.text(alphabet="0123456789-:T.Z+ tz", max_size=30))
    wild = draw(st.integers(0, 4)) == 4
    year = draw(st.integers(0, 9999))
    month = draw(st.integers(0, 14) if wild else st.integers(1, 12))
    day = draw(st.integers(0, 32) if wild else st.integers(1, 31))
    hour = draw(st.integers(0, 25) if wild else st.integers(0, 23))
    minute = draw(st.integers(0, 61) if wild else st.integers(0, 59))
    second = draw(st.integers(0, 61) if wild else st.integers(0, 59))
    text = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
    fraction = draw(st.none() | st.text(alphabet=_DIGITS, max_size=11))
    if fraction is not None:
        text += "." + fraction
    sign = draw(st.sampled_from(["", "Z", "Z", "+", "-"]))
    if sign in ("+", "-"):
        hours = draw(st.integers(0, 20) if wild else st.integers(0, 18))
        minutes = draw(st.integers(0, 61) if wild else st.sampled_from([0, 30, 45, 59]))
        sign += f"{hours:02d}:{minutes:02d}"
    return text + sign


def rare(
    common: st.SearchStrategy[str], uncommon: st.SearchStrategy[str], odds: int
) -> st.SearchStrategy[str]:
    """``uncommon`` about once in ``odds`` draws: a value that is not plain JSON sends the
    whole record to the mirror, so the plain ones must stay the rule for a test of the rest."""
    return st.integers(1, odds).flatmap(lambda pick: uncommon if pick == odds else common)


_NUMBERS = rare(
    st.one_of(
        st.integers(-(2**70), 2**70).map(str),
        st.sampled_from(
            [str(n) for base in (2**31, 2**63, 2**64) for n in (base - 1, base, -base, -base - 1)]
        ),
        st.floats(allow_nan=False, allow_infinity=False).map(repr),
        st.sampled_from(["1.0", "-0", "-0.0", "1e2", "1E-2", "0.5e+3", "9" * 40]),
    ),
    # Not JSON, or JSON past what orjson reads as Python does, or near a limit.
    st.sampled_from(
        ["NaN", "Infinity", "-Infinity", "01", "1.", ".5", "+1", "0x10", "1e400", "9" * 300]
    ),
    8,
)
# Characters json.dumps writes as they are, with ensure_ascii off.
_UNESCAPED = st.characters(exclude_categories=("Cc", "Cs"), exclude_characters='"\\')
# Strings as JSON writes them, with colons and spaces inside; and, rarer, as hands do:
# escapes, quotes, control characters, lone surrogates.
_STRINGS = rare(
    st.one_of(
        st.text(alphabet=_UNESCAPED, max_size=8).map(
            lambda text: json.dumps(text, ensure_ascii=False)
        ),
        st.sampled_from(['":"', '":x"', '" :"', '"a:b"', '"x :y"', '" : "', '"{}"', '"["']),
        timestamps().map(json.dumps),
    ),
    st.sampled_from(
        [
            '"a\\":b"',
            '"a\\" :b"',
            '"\\u0041"',
            '"\\ud800"',
            '"\\\\"',
            '"\\/"',
            '"a\x01b"',
            '"a\x7fb"',
            '"\\"article_id\\":1"',
            '"{\\"a\\":1,\\"a\\":2}"',
        ]
    )
    | st.text(max_size=8).map(json.dumps),
    6,
)
_SCALARS = rare(
    st.one_of(st.sampled_from(["null", "true", "false"]), _NUMBERS, _STRINGS),
    st.sampled_from(["True", "nul", "tru", "'x'"]),
    20,
)
# JSON's whitespace; rarely, characters that are whitespace elsewhere but not in JSON.
_SPACE = rare(
    st.sampled_from(["", "", "", " ", "\n", "\t", "\r\n", "  "]),
    st.sampled_from(["\x0c", "\xa0"]),
    40,
)
_KEYS = st.one_of(
    st.sampled_from(["a", "k", ":", "a:", " :", "", "article_id", "event_time", "x y"]),
    st.text(alphabet=_UNESCAPED, max_size=4),
).map(lambda key: json.dumps(key, ensure_ascii=False))


@st.composite
def members(draw: st.DrawFn, inner: st.SearchStrategy[str]) -> str:
    """An object's members; some keys repeat, written with other whitespace the second time."""
    pairs = draw(st.lists(st.tuples(_KEYS, inner), max_size=4))
    if pairs and draw(st.integers(0, 5)) == 5:
        pairs.append((draw(st.sampled_from(pairs))[0], draw(inner)))
    return ",".join(
        f"{draw(_SPACE)}{key}{draw(_SPACE)}:{draw(_SPACE)}{value}" for key, value in pairs
    )


_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda items: "[" + ",".join(items) + "]"),
        members(inner).map(lambda body: "{" + body + "}"),
    ),
    max_leaves=8,
)


def _valid_text(type_: EventType) -> st.SearchStrategy[str]:
    return {
        "string": _STRINGS,
        "boolean": st.sampled_from(["true", "false"]),
        "int": st.integers(-(2**31), 2**31 - 1).map(str),
        "bigint": st.integers(-(2**63), 2**63 - 1).map(str),
        "double": _NUMBERS,
        "timestamp": timestamps().map(json.dumps),
    }[type_]


@st.composite
def events(draw: st.DrawFn, fields: Sequence[EventField]) -> bytes:
    """An object over ``fields``: each mostly valid, sometimes absent, null, mistyped,
    repeated or nested; other members around them; whitespace anywhere."""
    parts: list[tuple[str, str]] = []
    for field in fields:
        choice = draw(st.integers(0, 29))
        if choice == 29:
            continue
        text = (
            "null"
            if choice == 28
            else draw(_JSON)
            if choice >= 25
            else draw(_valid_text(field.type))
        )
        parts.append((json.dumps(field.name), text))
    parts += draw(st.lists(st.tuples(_KEYS, _JSON), max_size=2))
    if parts and draw(st.integers(0, 9)) == 9:
        key, _ = draw(st.sampled_from(parts))
        parts.append((key, draw(_JSON)))  # a duplicate key, maybe the event time
    if draw(st.integers(0, 9)) == 9:
        parts.append(('"nested"', "{" + draw(members(_JSON)) + "}"))
    order = draw(st.permutations(parts))
    body = ",".join(
        f"{draw(_SPACE)}{key}{draw(_SPACE)}:{draw(_SPACE)}{text}" for key, text in order
    )
    text = draw(_SPACE) + "{" + body + draw(_SPACE) + "}" + draw(_SPACE)
    return text.encode("utf-8", "surrogatepass")


_GARBAGE = [b"x", b"]", b"}", b",", b"\x00", b" junk", b"{}", b"\xff", b"\xc3", b"\xed\xa0\x80"]


@st.composite
def mutated(draw: st.DrawFn, base: bytes) -> bytes:
    """``base`` with a few bytes cut, inserted or replaced, or garbage after it."""
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.integers(0, len(data)))
        action = draw(st.integers(0, 3))
        if action == 0:
            data[where : where + draw(st.integers(1, 4))] = b""
        elif action == 1:
            data[where:where] = draw(st.sampled_from([b'"', b":", b"\\", b" ", *_GARBAGE]))
        elif action == 2:
            data[where : where + 1] = bytes([draw(st.integers(0, 255))])
        else:
            data += draw(st.sampled_from(_GARBAGE))
    return bytes(data)


def values(fields: Sequence[EventField]) -> st.SearchStrategy[bytes | None]:
    return st.one_of(
        events(fields),
        events(fields),
        events(fields).flatmap(mutated),
        _JSON.map(lambda text: text.encode("utf-8", "surrogatepass")),
        st.binary(max_size=24),
        st.sampled_from([b"", None, b"{}", b"[]", b"1", b'"x"', b"null"]),
    )


_STAMPS = st.one_of(
    st.just(KAFKA_US),
    st.none(),
    st.integers(-62_135_596_800_000_000, 253_402_300_799_999_999),
)


@st.composite
def batches(draw: st.DrawFn, fields: Sequence[EventField]) -> list[Record]:
    """Mixed records; or many of one shape, some changed, as one producer writes them."""
    if draw(st.booleans()):
        return draw(st.lists(st.tuples(values(fields), _STAMPS), min_size=1, max_size=12))
    base = draw(events(fields))
    count = draw(st.integers(16, 40))
    stamp = draw(_STAMPS)
    changed = draw(st.lists(st.tuples(st.integers(0, count - 1), values(fields)), max_size=2))
    made: list[Record] = []
    for index in range(count):
        # Another time in the same shape, wherever a timestamp's seconds are.
        second = f"{index % 60:02d}".encode()
        made.append((_with_seconds(base, second), stamp))
    for index, value in changed:
        made[index] = (value, stamp)
    return made


def _with_seconds(value: bytes, second: bytes) -> bytes:
    marker = value.find(b"T")
    if marker < 0 or len(value) < marker + 9 or value[marker + 6 : marker + 7] != b":":
        return value
    return value[: marker + 7] + second + value[marker + 9 :]


# -- The property ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CONFIGS))
@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_the_fast_path_answers_as_the_mirror(name: str, data: st.DataObject) -> None:
    records = data.draw(batches(CONFIGS[name][0]))
    assert_same(name, records)


def _corpus(fields: Sequence[EventField], examples: int) -> list[list[Record]]:
    """The batches hypothesis draws first, the same on every run."""
    corpus: list[list[Record]] = []

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True)
    @given(records=batches(fields))
    def gather(records: list[Record]) -> None:
        corpus.append(records)

    gather()
    return corpus


@pytest.mark.parametrize("name", ["events", "typed"])
def test_the_generated_records_reach_every_side_of_the_gates(name: str) -> None:
    """The property above proves little unless its records take each path: plain values
    (the fast path's own answer), values for the mirror, duplicate keys, batches by column."""
    mirror, fast = parsers(name)
    corpus = _corpus(CONFIGS[name][0], examples=150)
    records = [record for batch in corpus for record in batch]
    plain = [fast._plain_object(value) is not None for value, _ in records]
    answers = [mirror.event_time_ms(value, stamp) for value, stamp in records]
    by_column = sum(
        fast._by_column(documents, [KAFKA_US] * len(batch)) is not None
        for batch in corpus
        if (documents := fast._plain_objects([value for value, _ in batch]))
    )
    valid = [type(answer) is int for answer in answers]
    shares = {
        "plain": sum(plain) / len(records),
        "plain and valid": sum(map(bool.__and__, plain, valid)) / len(records),
        "not plain": 1 - sum(plain) / len(records),
        "unsure": answers.count(UNSURE) / len(records),
        "malformed": answers.count(None) / len(records),
        "batches by column": by_column / len(corpus),
    }
    assert all(share >= 0.03 for share in shares.values()), shares


PLAIN = b'{"article_id": "a1", "user_id": "u1", "event_time": "2026-11-22T10:15:00.250Z"}'


def _page_view(
    article: str = '"a1"', time: str = '"2026-11-22T10:15:00.250Z"', **more: str
) -> bytes:
    members = [f'"article_id":{article}', f'"event_time":{time}']
    members += [f"{json.dumps(key)}:{text}" for key, text in more.items()]
    return ("{" + ",".join(members) + "}").encode()


EDGES: list[bytes | None] = [
    PLAIN,
    None,
    b"",
    b" ",
    b"{}",
    b"[]",
    b"[" + PLAIN + b"]",
    b"1",
    b'"x"',
    b"null",
    PLAIN + b" junk",
    PLAIN + b"\n" + PLAIN,
    b" \t\r\n" + PLAIN + b" \t\r\n",
    b"\x0c" + PLAIN,
    b"\xef\xbb\xbf" + PLAIN,
    PLAIN[:-1],
    PLAIN.replace(b"a1", b"\xff"),
    PLAIN.replace(b"a1", b"caf\xc3\xa9"),
    PLAIN.replace(b"a1", b"\xed\xa0\x80"),
    # Duplicate keys: side by side, with other whitespace before the colon, nested, in
    # arrays, spelt with an escape; and keys alike in two objects, which are fine.
    _page_view(article='"a1","article_id":"a2"'),
    _page_view(article='"a1","article_id" :"a2"'),
    _page_view(article='"a1","article_id"\n:"a2"'),
    _page_view(x='{"y":1,"y":2}'),
    _page_view(x='{"y":1, "y" :2}'),
    _page_view(x='[{"y":1},{"y":1,"y":1}]'),
    _page_view(x='{"y":1}', z='{"y":1}'),
    b'{"article_id":"a1","\\u0061rticle_id":"a2","event_time":"2026-11-22T10:15:00Z"}',
    # Colons and quotes inside strings, and strings that start with a colon.
    _page_view(x='":"'),
    _page_view(x='"a\\":b"'),
    _page_view(x='" :"', y='":x"'),
    _page_view(**{":": "1"}),
    _page_view(**{'":': "1"}),
    _page_view(article='":"', x='":"'),
    # A string starting with a colon beside a duplicate key: counted keys must not hide it.
    _page_view(article='"a1","article_id":"a2"', x='":"'),
    # NaN and Infinity; numbers huge, long, float, or no JSON number.
    *(_page_view(x=text) for text in ("NaN", "Infinity", "-Infinity", "nan")),
    *(_page_view(x=text) for text in (str(2**64), str(-(2**63) - 1), "1e400", "9" * 300)),
    *(_page_view(x=text) for text in ("01", "1.", ".5", "+1", "-", "1e", "-0", "-0.0")),
    # Nesting, near and far from the mirror's bound.
    _page_view(x="[" * 499 + "]" * 499),
    _page_view(x="[" * 501 + "]" * 501),
    _page_view(x='{"a":' * 40 + "1" + "}" * 40),
    # Escapes anywhere, lone surrogates among them.
    _page_view(article='"a\\u0031"'),
    _page_view(article='"\\ud800"'),
    _page_view(time='"2026-11-22T10:15:00\\u005a"'),
    # Whitespace before colons, JSON's or not.
    b'{"article_id" : "a1", "event_time" : "2026-11-22T10:15:00Z"}',
    b'{"article_id"\t:"a1","event_time":"2026-11-22T10:15:00Z"}',
    b'{"article_id"\xc2\xa0:"a1","event_time":"2026-11-22T10:15:00Z"}',
    b'{\n  "article_id": "a1",\n  "event_time": "2026-11-22T10:15:00Z"\n}\n',
    # Fields missing, null, of another type; timestamps out of range or misshapen.
    b'{"event_time":"2026-11-22T10:15:00Z"}',
    _page_view(article="null"),
    _page_view(article="1"),
    _page_view(time="null"),
    _page_view(time="1795342500"),
    _page_view(time='"2026-02-29T10:15:00Z"'),
    _page_view(time='"2026-11-22T24:15:00Z"'),
    _page_view(time='"2026-11-22T10:15:00+18:01"'),
    _page_view(time='"2026-11-22 10:15:00Z"'),
    _page_view(time='"0000-01-01T00:00:00.123456789-18:00"'),
    _page_view(user_id="null"),
    _page_view(user_id="7"),
    b"x" * (LIMIT + 1),
    _page_view(x='"' + "p" * 30_000 + '"'),
]


@pytest.mark.parametrize("name", ["events", "events-kafka"])
def test_the_edges_one_by_one_and_in_batches(name: str) -> None:
    stamps: list[int | None] = [KAFKA_US, None, -1, 0]
    assert_same(name, [(value, stamps[index % 4]) for index, value in enumerate(EDGES)])
    for value in EDGES:
        assert_same(name, [(value, KAFKA_US)] * 20)
        assert_same(name, [(PLAIN, KAFKA_US)] * 19 + [(value, KAFKA_US)])


@example(second=59)
@given(second=st.integers(0, 59))
def test_the_mirror_is_unsure_of_duplicates_and_so_is_the_fast_path(second: int) -> None:
    mirror, fast = parsers("events")
    time = f'"2026-11-22T10:15:{second:02d}Z"'
    for value in (
        _page_view(time=time, x="1", y='{"k":1,"k":2}'),
        _page_view(time=time, article='"a1","article_id":"a1"'),
        _page_view(time=time, article='"a1", "article_id" :"a1"'),
    ):
        assert mirror.event_time_ms(value, None) is UNSURE
        assert fast.event_time_ms(value, None) is UNSURE
        assert fast.event_times_ms([PLAIN] * 30 + [value], [None] * 31)[-1] is UNSURE


class _Refusing(EventParser):
    """A mirror that must not be asked: the fast path took every record itself."""

    def event_time_ms(
        self, value: bytes | None, kafka_timestamp_us: int | None
    ) -> int | Unsure | None:
        raise AssertionError(f"the mirror was asked about {value!r}")


@pytest.mark.parametrize(
    "value",
    [
        PLAIN,
        b'{"article_id":"a1","event_time":"2026-11-22T10:15:00Z","n":[1,{"a":"b:c"}],"x":"a : b"}',
        b'{"article_id":"caf\xc3\xa9","user_id":null,"event_time":"2026-11-22T10:15:00.1+05:30"}',
        b'{"article_id":"a1","event_time":"2026-11-22T10:15:00Z"}',
        b'{"article_id":"a1","event_time":"2026-02-30T10:15:00Z"}',
        b'{"event_time":"2026-11-22T10:15:00Z"}',
    ],
)
def test_plain_values_never_reach_the_mirror(value: bytes) -> None:
    events, time_source, time_field = CONFIGS["events"]
    mirror = EventParser(
        events=events, time_source=time_source, time_field=time_field, max_value_bytes=LIMIT
    )
    refusing = _Refusing(
        events=events, time_source=time_source, time_field=time_field, max_value_bytes=LIMIT
    )
    expected = mirror.event_time_ms(value, None)
    fast = FastEventParser(refusing, LIMIT)
    assert fast.event_time_ms(value, None) == expected
    assert fast.event_times_ms([value] * 50, [None] * 50) == [expected] * 50


def test_a_plain_batch_is_judged_by_column() -> None:
    mirror, fast = parsers("events")
    values = [PLAIN.replace(b"00.250Z", f"{second:02d}.250Z".encode()) for second in range(60)]
    expected = [1_795_342_500_250 + 1000 * second for second in range(60)]
    assert list(map(mirror.event_time_ms, values, [None] * 60)) == expected
    assert fast.event_times_ms(values, [None] * 60) == expected
