"""A file sink's backfills: ``<root>/output/backfill-<n>/``, its files and its commit.

A backfill's rows are written by one batch job into a directory of their own; the commit
(``_backfill.json``, ``records.backfill``), written atomically after the job, names the files
and the windows they now own. A directory without a commit is an attempt that died: nobody
reads it, and the next attempt of the same number replaces it. Why a directory beside the
generations' and not rows appended to one: a generation's ``_spark_metadata`` belongs to its
streaming query, and a batch job appending there would be a second writer of its log.

Readers take the generations' rows minus those of the windows a backfill owns, plus each
backfill's rows minus those a later backfill owns (:func:`superseded`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import reduce
from typing import TYPE_CHECKING

from pyspark_kafka_upgrade._adapters.storage.filesystem import join_uri, open_location
from pyspark_kafka_upgrade._core.query.columns import WINDOW_END, WINDOW_START
from pyspark_kafka_upgrade._core.query.window_sql import owned_by
from pyspark_kafka_upgrade._domain.records.backfill import (
    COMMIT_FILE,
    BackfillCommit,
    backfill_directory_name,
    parse_backfill_directory_name,
)
from pyspark_kafka_upgrade._domain.values.layout import output_root

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "backfill_directory",
    "commit_backfill",
    "committed_backfills",
    "read_backfills",
    "superseded",
    "write_backfill_rows",
]


def backfill_directory(root: str, backfill: int) -> str:
    return join_uri(output_root(root), backfill_directory_name(backfill))


def committed_backfills(root: str) -> list[BackfillCommit]:
    """Every committed backfill under the pipeline root ``root``, oldest first."""
    directory = open_location(output_root(root))
    if not directory.exists():
        return []
    commits = []
    for name in directory.list_names():
        number = parse_backfill_directory_name(name)
        if number is None:
            continue
        commit = directory.child(name, COMMIT_FILE)
        if commit.exists():
            commits.append(BackfillCommit.from_json(json.loads(commit.read_bytes())))
    return sorted(commits, key=lambda commit: commit.backfill)


def write_backfill_rows(rows: DataFrame, directory: str, file_format: str) -> tuple[str, ...]:
    """Write ``rows`` into ``directory`` (replacing an attempt that died), and the names of
    the files written."""
    rows.write.mode("overwrite").format(file_format).save(directory)
    sizes = open_location(directory).file_sizes()
    return tuple(sorted(name for name in sizes if name.endswith(f".{file_format}")))


def commit_backfill(directory: str, commit: BackfillCommit) -> None:
    """The backfill's windows become its own, all at once."""
    text = json.dumps(commit.to_json(), indent=2) + "\n"
    open_location(join_uri(directory, COMMIT_FILE)).write_atomically(text.encode())


def read_backfills(
    spark: SparkSession,
    root: str,
    commits: Sequence[BackfillCommit],
    file_format: str,
    generations: Sequence[int] | None = None,
) -> list[tuple[BackfillCommit, DataFrame]]:
    """Each backfill's rows that no later backfill supersedes (of ``generations`` only, when
    given: a backfilled row keeps the generation whose events it counts)."""
    from pyspark.sql import functions as F

    read = []
    for index, commit in enumerate(commits):
        if not commit.files:
            continue
        directory = backfill_directory(root, commit.backfill)
        rows = spark.read.format(file_format).load(
            [join_uri(directory, name) for name in commit.files]
        )
        rows = superseded(rows, commits[index + 1 :])
        if generations is not None:
            rows = rows.where(F.col("generation").isin(list(generations)))
        read.append((commit, rows))
    return read


def superseded(rows: DataFrame, commits: Sequence[BackfillCommit]) -> DataFrame:
    """``rows`` without those of the windows any of ``commits`` owns."""
    if not commits:
        return rows
    owned = reduce(lambda any_, commit: any_ | _covered(commit), commits[1:], _covered(commits[0]))
    return rows.where(~owned)


def _covered(commit: BackfillCommit) -> Column:
    from pyspark.sql import functions as F

    return F.expr(owned_by(commit, f"unix_micros({WINDOW_START})", f"unix_micros({WINDOW_END})"))
