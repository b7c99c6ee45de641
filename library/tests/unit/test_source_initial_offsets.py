from pathlib import Path

import pytest

from pyspark_kafka_upgrade._adapters.kafka.initial_offsets import (
    load_initial_offsets,
    load_or_resolve,
    save_initial_offsets,
)
from pyspark_kafka_upgrade._adapters.kafka.kafka_errors import (
    InitialOffsetsError,
)


def test_saved_file_has_the_built_in_sources_format(tmp_path: Path) -> None:
    location = tmp_path / "checkpoint" / "sources" / "0" / "0"
    save_initial_offsets(str(location), {"views": {1: 5, 0: 7}})
    assert location.read_bytes() == b'\x00v1\n{"views":{"0":7,"1":5}}'
    assert load_initial_offsets(str(location)) == {"views": {0: 7, 1: 5}}
    # Only the file itself is left: the temporary file was renamed over it.
    assert [p.name for p in location.parent.iterdir()] == ["0"]


@pytest.mark.parametrize("as_uri", [False, True])
def test_paths_and_file_uris_work(tmp_path: Path, as_uri: bool) -> None:
    path = tmp_path / "initial"
    location = path.as_uri() if as_uri else str(path)
    assert load_initial_offsets(location) is None
    save_initial_offsets(location, {"t": {0: 1}})
    assert load_initial_offsets(location) == {"t": {0: 1}}


def test_resolves_once_and_then_reuses_what_it_stored(tmp_path: Path) -> None:
    location = str(tmp_path / "initial")
    answers = iter([{"t": {0: 100}}, {"t": {0: 200}}])
    assert load_or_resolve(location, lambda: next(answers)) == {"t": {0: 100}}
    # A driver that died before its first commit asks again: it gets the first answer.
    assert load_or_resolve(location, lambda: next(answers)) == {"t": {0: 100}}


def test_reads_a_file_the_built_in_source_wrote_without_the_zero_byte(tmp_path: Path) -> None:
    location = tmp_path / "initial"
    location.write_bytes(b'v1\n{"t":{"0":3}}')
    assert load_initial_offsets(str(location)) == {"t": {0: 3}}


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        (b'\x00v2\n{"t":{"0":3}}', "not 'v1'"),
        (b"\x00v1\n{broken", "is not valid JSON"),
    ],
)
def test_a_foreign_or_damaged_file_is_an_error(
    tmp_path: Path, content: bytes, complaint: str
) -> None:
    location = tmp_path / "initial"
    location.write_bytes(content)
    with pytest.raises(InitialOffsetsError, match=complaint):
        load_initial_offsets(str(location))
