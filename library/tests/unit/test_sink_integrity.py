"""A generation's committed files against its sink log, through ``storage``: the pure check
on made-up listings, then the gathering on a hand-made output directory (no JVM), and a
directory this user may not read (a subprocess, see ``support.permissions``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pyspark_kafka_upgrade._adapters.sink.integrity import (
    Listing,
    check_generation,
    damaged_files,
)
from pyspark_kafka_upgrade._core.formats.sink_log import SinkFileEntry
from pyspark_kafka_upgrade._domain.records.damage import Damage, DamagedFile, Part
from pyspark_kafka_upgrade._domain.records.sink_errors import IntegrityError
from support.permissions import unprivileged, unreadable

OUTPUT = "file:///data/output/generation-2"


def entry(name: str, size: int = 500, directory: str = OUTPUT) -> SinkFileEntry:
    return SinkFileEntry(
        path=f"{directory}/{name}", size=size, action="add", modification_time_ms=0
    )


# -- The check, on listings ------------------------------------------------------------------


def test_committed_files_as_the_log_committed_them_are_not_damaged() -> None:
    listing = Listing(OUTPUT, {"part-0.parquet": 500, "part-1.parquet": 500, "stray": 9})

    assert damaged_files(2, [entry("part-0.parquet"), entry("part-1.parquet")], [listing]) == ()


def test_files_the_log_names_under_another_spelling_are_found_in_the_generations_directory(
    tmp_path: Path,
) -> None:
    # Databricks writes the log with its own qualified paths (dbfs:/Volumes/...), which this
    # process cannot open; the generation's directory, as the settings name it, holds them.
    directory = tmp_path / "output" / "generation-2"
    directory.mkdir(parents=True)
    (directory / "part-0.parquet").write_bytes(b"x" * 500)
    elsewhere = "dbfs:/Volumes/main/pipelines/data/output/generation-2"
    log = directory / "_spark_metadata"
    log.mkdir()
    (log / "0").write_text(
        "v1\n"
        + "\n".join(
            json.dumps(
                {
                    "path": f"{elsewhere}/{name}",
                    "size": 500,
                    "isDir": False,
                    "modificationTime": 0,
                    "blockReplication": 1,
                    "blockSize": 33554432,
                    "action": "add",
                }
            )
            for name in ("part-0.parquet", "part-1.parquet")
        )
    )

    check = check_generation(2, str(directory))

    assert check.damaged == (
        DamagedFile(
            2, Part.COMMITTED_FILE, f"{elsewhere}/part-1.parquet", Damage.MISSING, "is missing"
        ),
    )


def test_a_file_gone_and_a_file_of_another_size_are_named_in_log_order() -> None:
    committed = [entry("part-0.parquet"), entry("part-1.parquet"), entry("part-2.parquet")]
    listing = Listing(OUTPUT, {"part-0.parquet": 504, "part-2.parquet": 500})

    damaged = damaged_files(2, committed, [listing])

    assert damaged == (
        DamagedFile(
            2,
            Part.COMMITTED_FILE,
            f"{OUTPUT}/part-0.parquet",
            Damage.WRONG_SIZE,
            "has 504 bytes where the sink log committed 500",
        ),
        DamagedFile(
            2, Part.COMMITTED_FILE, f"{OUTPUT}/part-1.parquet", Damage.MISSING, "is missing"
        ),
    )
    assert [file.message() for file in damaged] == [
        "generation 2's committed file part-0.parquet has 504 bytes where the sink log committed "
        "500: the output was changed outside the pipeline after its batch committed; restore it "
        "from a backup",
        "generation 2's committed file part-1.parquet is missing: the output was changed "
        "outside the pipeline; restore it from a backup",
    ]


def test_a_directory_that_cannot_be_listed_is_named_once_not_each_file_in_it() -> None:
    other = "file:///data/elsewhere"
    committed = [entry("part-0.parquet"), entry("part-1.parquet"), entry("part-9", 7, other)]
    listings = [Listing(OUTPUT, None), Listing(other, {"part-9": 7})]

    (damaged,) = damaged_files(2, committed, listings)

    assert damaged == DamagedFile(
        2, Part.OUTPUT_DIRECTORY, OUTPUT, Damage.NO_ACCESS, "cannot be read (permission denied)"
    )
    assert damaged.message("run `output show --generation 1` to see the rest") == (
        f"generation 2's output directory {OUTPUT} cannot be read (permission denied): give the "
        "user that runs this command read access to it and to the directories above it, or run "
        "`output show --generation 1` to see the rest"
    )


def test_names_with_percent_escapes_and_the_other_spellings_of_a_directory_match() -> None:
    # The log writes a URI (file:///..., %-escapes); a listing may name it file:/ or as a path.
    committed = [entry("part-0%20a.parquet", directory="file:///data/my%20output")]

    assert (
        damaged_files(2, committed, [Listing("/data/my output", {"part-0 a.parquet": 500})]) == ()
    )


# -- Gathering, on a real directory ----------------------------------------------------------


def write_generation(directory: Path, sizes: dict[str, int]) -> None:
    """A sink log committing one file per batch, and the files as big as committed."""
    for batch, (name, size) in enumerate(sizes.items()):
        line = {"path": (directory / name).as_uri(), "size": size, "action": "add"}
        log = directory / "_spark_metadata" / str(batch)
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("v1\n" + json.dumps(line), encoding="utf-8")
        (directory / name).write_bytes(b"x" * size)


def test_check_generation_lists_the_directory_once_and_compares(tmp_path: Path) -> None:
    directory = tmp_path / "output" / "generation-2"
    write_generation(directory, {"part-0.parquet": 300, "part-1.parquet": 400})
    (directory / "part-1.parquet").write_bytes(b"x" * 399)

    check = check_generation(2, str(directory))

    assert check.log is not None and check.log.last_batch_id == 1
    assert [(file.name, file.damage) for file in check.damaged] == [
        ("part-1.parquet", Damage.WRONG_SIZE)
    ]
    assert [Path(e.path).name for e in check.healthy] == ["part-0.parquet"]


def test_a_generation_without_a_log_has_nothing_committed_and_nothing_damaged(
    tmp_path: Path,
) -> None:
    check = check_generation(3, str(tmp_path / "output" / "generation-3"))

    assert check.log is not None and check.log.files == ()
    assert check.damaged == ()


def test_more_than_one_damaged_file_is_still_one_line() -> None:
    damaged = [
        DamagedFile(2, Part.COMMITTED_FILE, f"{OUTPUT}/part-{n}", Damage.MISSING, "is missing")
        for n in range(3)
    ]

    assert str(IntegrityError(damaged)) == (
        "generation 2's committed file part-0 is missing: the output was changed outside the "
        "pipeline; restore it from a backup (2 more damaged in generation 2: `verify --json` "
        "lists each)"
    )


# -- A directory this user may not read -------------------------------------------------------

PROBE = """
import sys
from pyspark_kafka_upgrade._adapters.sink import integrity
from pyspark_kafka_upgrade._adapters.sink.integrity import check_generation
from pyspark_kafka_upgrade._domain.records.sink_errors import IntegrityError
print([file.message() for file in check_generation(2, sys.argv[1]).damaged])
try:
    integrity.read_generation_log(2, sys.argv[1])
except IntegrityError as error:
    print(error)
"""


def test_an_output_directory_this_user_may_not_read_is_one_record_and_one_line(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "output" / "generation-2"
    write_generation(directory, {"part-0.parquet": 300})
    with unreadable(directory):
        probe = subprocess.run(
            unprivileged([sys.executable, "-c", PROBE, str(directory)]),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    assert probe.returncode == 0, probe.stderr
    line = (
        f"generation 2's sink log {directory}/_spark_metadata cannot be read (permission denied): "
        "give the user that runs this command read access to it and to the directories above it"
    )
    assert probe.stdout.splitlines() == [str([line]), line]
