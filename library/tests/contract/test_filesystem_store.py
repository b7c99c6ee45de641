"""What only the filesystem offset store promises: whole files, and no temporary file read."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

# Import layout that holds whatever the package is named: a straight import sorts before
# the package's from-imports, and trailing commas keep those exploded at any name length.
import support.offset_stores as stores
from pyspark_kafka_upgrade._adapters.ledger.filesystem_store import (
    _HadoopFiles,
)
from pyspark_kafka_upgrade._domain.records.ledger import (
    GenerationStatus,
)
from pyspark_kafka_upgrade._domain.records.ledger_errors import (
    LedgerRecordError,
)
from pyspark_kafka_upgrade._domain.records.store import (
    LEDGER_SCHEMA_VERSION,
)


def test_filesystem_writes_leave_no_temporary_files(
    filesystem_harness: stores.StoreHarness, filesystem_root: Path
) -> None:
    with filesystem_harness.open_store() as store:
        for batch_id in range(3):
            store.record_batch(stores.make_batch(batch_id))
        store.record_batch(stores.make_batch(1, input_rows=7))
        store.record_generation(stores.make_generation(1))
        store.set_generation_status("page-views", 1, GenerationStatus.RUNNING, at_ms=2)
        store.record_gap(stores.make_gap(5))

    files = [path for path in filesystem_root.rglob("*") if path.is_file()]
    assert not [path for path in files if ".tmp" in path.name or "COPYING" in path.name]
    records = [path for path in files if not path.name.endswith(".crc")]
    assert len(records) == 6  # schema, 3 batches, 1 generation, 1 gap
    for path in records:
        text = path.read_text(encoding="utf-8")
        assert text.count("\n") == 1 and text.endswith("\n")
        assert isinstance(json.loads(text), dict)


def test_filesystem_reads_ignore_stray_temporary_files(
    filesystem_harness: stores.StoreHarness, filesystem_root: Path
) -> None:
    with filesystem_harness.open_store() as store:
        store.record_batch(stores.make_batch(1))
        store.record_generation(stores.make_generation(1))
        store.record_gap(stores.make_gap(5))
        strays = {
            "batches/page-views/gen=1": [
                f".00000000000000000009.json.{uuid.uuid4()}.tmp",
                "00000000000000000008.json._COPYING_",
            ],
            "generations/page-views": [f".gen=2.json.{uuid.uuid4()}.tmp"],
            "gaps/page-views/gen=1": [f".00000000000000000006-{uuid.uuid4().hex}.json.tmp"],
        }
        for directory, names in strays.items():
            for name in names:
                (filesystem_root / directory / name).write_text('{"pipeline": "page-vi')

        assert store.batches("page-views", 1) == [stores.make_batch(1)]
        assert store.last_batch("page-views", 1) == stores.make_batch(1)
        assert store.generations("page-views") == [stores.make_generation(1)]
        assert store.gaps("page-views") == [stores.make_gap(5)]
        assert store.pipelines() == ["page-views"]


def test_filesystem_rejects_a_pipeline_name_that_is_not_one_directory(
    filesystem_harness: stores.StoreHarness,
) -> None:
    with (
        filesystem_harness.open_store() as store,
        pytest.raises(ValueError, match="cannot be a directory"),
    ):
        store.record_batch(stores.make_batch(0, pipeline="../x"))


def test_filesystem_a_corrupt_record_file_is_an_error_not_a_silent_skip(
    filesystem_harness: stores.StoreHarness, filesystem_root: Path
) -> None:
    with filesystem_harness.open_store() as store:
        store.record_batch(stores.make_batch(1))
        corrupt = filesystem_root / "batches/page-views/gen=1/00000000000000000002.json"
        corrupt.write_text('{"pipeline": "page-vi')

        with pytest.raises(LedgerRecordError, match=r"00000000000000000002\.json"):
            store.batches("page-views", 1)


def test_filesystem_a_second_first_open_keeps_the_schema_file_it_lost_the_race_for(
    filesystem_harness: stores.StoreHarness,
    filesystem_root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    filesystem_harness.open_store().close()
    schema = filesystem_root / "_schema.json"
    created = schema.stat().st_ino
    # The race, made certain: this opener looked before the first one had written the file.
    monkeypatch.setattr(_HadoopFiles, "exists", lambda self, uri: False)

    with filesystem_harness.open_store() as store:
        assert store.schema_version() == LEDGER_SCHEMA_VERSION
    # Replaced, the file would have been missing for a moment: Hadoop's local rename with
    # overwrite deletes the target first, and a concurrent reader failed on it.
    assert schema.stat().st_ino == created
