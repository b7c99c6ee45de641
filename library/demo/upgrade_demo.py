"""A guided upgrade on a local Kafka, with the real commands and their real output.

It plays the whole procedure a team follows when a change needs a new checkpoint:

  1. version 1 counts page views per article in 10-minute windows and stops with the
     window 10:30-10:40 still open: its events live only in the checkpoint's state;
  2. version 2 adds a metric (users), which the checkpoint cannot carry: `run` refuses;
  3. `upgrade plan --out` says where each partition restarts so that the open window is
     rebuilt, and writes that plan to a file for review;
  4. `upgrade apply PLAN` applies exactly the reviewed plan: generation 1 retired,
     generation 2 planned;
  5. more events arrive, and `run` starts generation 2 from the plan;
  6. `output show` reads both generations, and the demo checks the result against a count
     of every event: no event lost, no window written twice; generation 1's windows have
     no users, which version 1 never computed;
  7. `upgrade backfill --plan` says which offsets the history of users would be read from,
     and `upgrade backfill` computes it with version 2's query over exactly the events
     generation 1 counted, and commits it beside the generations: `output show` now has
     users in every window;
  8. `verify` proves the same from the pipeline's own records: it reads the range back from
     Kafka, recomputes every window and compares it with what each generation (and the
     backfill) wrote;
  9. `upgrade rollback` refuses now: generation 2 has committed, so a problem found now is
     fixed forward;
 10. on the side, the same events go through a naive restart (a new checkpoint starting at
     the last batch's end offsets), and the demo prints what it lost, window by window,
     next to the upgrade's 0 lost and 0 written twice.

Kafka: KAFKA_BOOTSTRAP_SERVERS when set, else Testcontainers when a Docker daemon answers,
else Apache Kafka as a local process when Java and Maven can run it, else the local noida-db
broker from PyPI: the same choice as the tests (KAFKA_BACKEND).
Each run works in a fresh directory and on a topic of its own. `--connector builtin` plays
it on Spark's JVM connector (its jars from SPARK_KAFKA_JARS, or Maven); `--sink delta` into one
Delta table that both generations append to (Delta's jars from SPARK_DELTA_JARS, or Maven),
and shows the table's history (the backfill is one more commit there, replacing those
windows' rows). It plays the
library's reference pipeline (``pyspark_kafka_upgrade._example``), which is the template's
default project. Exit code 0 when the check holds, 1 when it does not, 2 when a step
failed.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
import tomllib
import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow.parquet as pq
import pyspark

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import support.pipelines as pipelines  # noqa: E402
from pyspark_kafka_upgrade import testing  # noqa: E402
from pyspark_kafka_upgrade._adapters.sink.file_sink import FileSink  # noqa: E402
from pyspark_kafka_upgrade._domain.values.catalog import SINK_FORMATS, SINKS, SinkFormat  # noqa: E402
from pyspark_kafka_upgrade._domain.values.layout import table_location  # noqa: E402
from pyspark_kafka_upgrade._example.pipeline import PROJECT  # noqa: E402
from pyspark_kafka_upgrade.testing._kafka.backend import KafkaBackendError  # noqa: E402
from pyspark_kafka_upgrade.testing._kafka.start import start_kafka_backend  # noqa: E402

# The command a user of the pipeline types; the module this runs it as.
PACKAGE = PROJECT.command
MODULE = "pyspark_kafka_upgrade._example"

BASE_MS = pipelines.BASE_MS  # 2025-11-22T10:00:00Z
EVENT_EVERY_MS = 20_000
WINDOW_MS = 10 * 60_000
DELAY_MS = 5 * 60_000
ARTICLES = ("a-0001", "a-0002", "a-0003")
PARTITIONS = 2
FIRST_EVENTS = 120  # 10:00:00 to 10:39:40: W = 10:34:40, so 10:30-10:40 stays open
MORE_EVENTS = 60  # 10:40:00 to 10:59:40, produced after the upgrade is applied
# Batches of 40 show the watermark moving. PySpark 4.0 and 4.1 run "available now" as one
# batch, which a rate limit would cut short, so there the demo reads without one.
RATE_LIMIT = 40 if tuple(map(int, pyspark.__version__.split(".")[:2])) >= (4, 2) else 0
MALFORMED = (b"not json at all", b'{"article_id": 42, "event_time": "2025-11-22T10:05:00Z"}')


class StepFailedError(Exception):
    """A command of the demo exited with a code it should not have."""


def run(settings: Path, *args: str, expect: int = 0) -> str:
    return cli(settings, "run", *args, "--master", "local[2]", expect=expect)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="work directory for settings, checkpoints, output and ledger "
        "(default: a new temporary directory, kept for you to look at)",
    )
    parser.add_argument(
        "--connector",
        choices=("python", "builtin"),
        default="python",
        help="Kafka connector of both versions (default python: pip-only)",
    )
    parser.add_argument(
        "--sink",
        choices=SINK_FORMATS,
        default="parquet",
        help="sink.format of both versions (default parquet: a directory per generation; "
        "delta: one table for every generation)",
    )
    args = parser.parse_args(argv)
    work = (args.dir or Path(tempfile.mkdtemp(prefix="upgrade-demo-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    if any(work.iterdir()):
        parser.error(f"{work} is not empty: give a new or empty --dir")
    try:
        with start_kafka_backend() as backend:
            say(f"Kafka: {backend.description}")
            outcome = demo(work, backend.bootstrap_servers, args.connector, args.sink)
        say(f"\nSettings, checkpoints, output and ledger are in {work}")
        return outcome
    except StepFailedError as error:
        print(f"\ndemo: {error}", file=sys.stderr)
        return 2
    except KafkaBackendError as error:
        print(f"demo: no Kafka to run on: {error}", file=sys.stderr)
        return 2


def demo(work: Path, bootstrap: str, connector: str, sink: SinkFormat = "parquet") -> int:
    topic = f"demo-page-views-{uuid.uuid4().hex[:8]}"
    shared = {
        "bootstrap_servers": bootstrap,
        "topic": topic,
        "connector": connector,
        "sink": sink,
    }
    one_table = SINKS[sink].one_table
    version_1 = write_settings(work, "version-1.toml", shared, users=False)
    version_2 = write_settings(work, "version-2.toml", shared, users=True)
    times = [BASE_MS + i * EVENT_EVERY_MS for i in range(FIRST_EVENTS + MORE_EVENTS)]
    events = pipelines.page_views(ARTICLES, times, partitions=PARTITIONS)

    heading(
        "0. A topic with 40 minutes of page views",
        f"{FIRST_EVENTS} events from {iso(times[0])}, one every 20 s, over {PARTITIONS} "
        f"partitions, and {len(MALFORMED)} malformed records. Settings: {version_1}",
    )
    testing.create_topic(bootstrap, topic, PARTITIONS)
    testing.produce(bootstrap, topic, events[:FIRST_EVENTS])
    testing.produce(
        bootstrap,
        topic,
        [testing.Record(i % PARTITIONS, None, value, BASE_MS) for i, value in enumerate(MALFORMED)],
    )
    print(version_1.read_text())

    heading(
        "1. Version 1 runs",
        "Each batch's watermark is the one it ran with. A window is written once its end is "
        "at or before the watermark, so windows up to 10:30 reach the output and 10:30-10:40 "
        "stays open, in the checkpoint's state only.",
    )
    run(version_1, "--available-now")
    cli(version_1, "checkpoint", "show")

    heading(
        "2. Version 2 adds a metric",
        "users = approx_count_distinct(user_id) changes the state's schema. Spark cannot "
        "carry that on the old checkpoint, so `run` refuses, with the advice.",
    )
    print(f"$ diff {version_1.name} {version_2.name}")
    print('< views = "count(*)"\n---\n> views = "count(*)"')
    print('> users = "approx_count_distinct(user_id)"')
    run(version_2, "--available-now", expect=3)

    heading(
        "3. Plan the upgrade, and write the plan down for review",
        "Restarting at the last batch's end offsets would lose the open window; restarting "
        "at earliest would write every window twice. The plan restarts each partition at its "
        "first record that can still fall in an open window. `--out` writes it to a file that "
        "a reviewer reads (`upgrade show`) before anything changes.",
    )
    plan_file, picture = work / "upgrade-plan.json", work / "upgrade-plan.png"
    cli(version_2, "upgrade", "plan", "--out", plan_file.name, "--plot", picture.name)
    say(
        f"The plan's picture is {picture}: per partition, each batch as its offsets by its "
        "event times, W, the open windows, the restart offset and the records to replay.\n"
        "A reviewer reads the file back, changing nothing:\n"
    )
    cli(version_2, "upgrade", "show", plan_file.name, quiet_output=True)

    heading(
        "4. Apply exactly the reviewed plan",
        "`apply` first checks that nothing the plan rests on moved (the last committed batch, "
        "the settings, the partitions, the offsets Kafka still holds), then retires generation "
        "1, never deleting it. Generation 2 gets its own checkpoint and "
        + (
            "appends to the same table, each commit marked with its generation."
            if one_table
            else "output directories: a new checkpoint in the old sink directory would be skipped."
        ),
    )
    cli(version_2, "upgrade", "apply", plan_file.name)

    heading(
        "5. More events arrive; generation 2 starts from the plan",
        f"{MORE_EVENTS} events from {iso(times[FIRST_EVENTS])} on. The replay drops every "
        "window that ends at or before W: generation 1 wrote those.",
    )
    testing.produce(bootstrap, topic, events[FIRST_EVENTS:])
    run(version_2, "--available-now")

    heading(
        "6. Both generations, "
        + ("in the one table" if one_table else "read through their own _spark_metadata"),
        "Version 1's rows have no users column: it did not compute one."
        if not one_table
        else "Version 1 computed no users: its rows hold null in the column version 2 added.",
    )
    cli(version_2, "output", "show", "--limit", "12")
    if one_table:
        show_history(table_location(str(work / "data")))
    checked, upgrade_rows = check(version_2, times)
    backfill(version_2, one_table, work)

    heading(
        "8. Verify, as a team would after its own upgrade",
        "`verify` reads the range back from Kafka (as far as the ledger says the pipeline "
        "read), recomputes every window with the pipeline's parsing and aggregates, and "
        "compares it with what each generation (or, for the windows it owns, the backfill) "
        "committed: exact, lost, written twice, different, late by design, or still open. "
        "The malformed records are named, never dropped from the count silently. Exit code 0 "
        "only when nothing is lost, written twice or different.",
    )
    verified = cli(version_2, "verify", "--from", iso(BASE_MS - WINDOW_MS), expect=checked)
    ok = checked if "OK: nothing lost" in verified else 1

    heading(
        "9. Too late to roll back",
        "`upgrade rollback` returns to generation 1 only while generation 2 has committed "
        "nothing (deploy version 1 again first). Generation 2 has committed, so it refuses and "
        "changes nothing: a problem found now is fixed forward, with a new upgrade.",
    )
    cli(version_2, "upgrade", "rollback", expect=3)

    heading(
        "10. What a naive restart would have lost",
        "The usual advice: start the new version on a new checkpoint at the offsets where the "
        "old one stopped (startingOffsets = the last batch's end offsets). Played on the side, "
        "with the same events, into a directory of its own, after version 1's output:",
    )
    plan = json.loads(plan_file.read_text())
    naive = write_settings(
        work,
        "naive-restart.toml",
        shared,
        users=True,
        pipeline_name=f"{topic}-naive",
        root=work / "naive",
        starting_offsets=plan["old_end_offsets"],
    )
    print(f"$ grep starting_offsets {naive.name}")
    print(f"starting_offsets = {json.dumps(plan['old_end_offsets'])}")
    run(naive, "--available-now")
    contrast = compare_naive(version_2, upgrade_rows, naive, times)
    say(f"\nThe plan's picture: {picture}")
    return ok if contrast == 0 else 1


def backfill(settings: Path, one_table: bool, work: Path) -> None:
    """Version 2's users for the windows generation 1 wrote without them: the plan, the
    backfill, and the history as a reader now sees it."""
    heading(
        "7. Backfill the history of the new metric",
        "Generation 1's windows have no users: version 1 never computed them. `upgrade "
        "backfill` computes them with version 2's query from the records Kafka still holds, "
        "over exactly the events generation 1 counted in each window. `--plan` only says what "
        "it would read, and what retention took (windows it cannot compute whole are named "
        "and left as they are).",
    )
    cli(settings, "upgrade", "backfill", "--plan")
    if one_table:
        say(
            "On the table, the backfill is one commit: its rows replace every row of the "
            "windows it fills (replaceWhere), and its userMetadata names them. Every reader of "
            "the table, Spark or not, sees each window once. Run again, it finds nothing left "
            "to do; its number is a Delta transaction, so a second write of it changes "
            "nothing.\n"
        )
    else:
        say(
            "The backfill writes its rows into output/backfill-1/ and then its commit, "
            "_backfill.json, at once: from then on every reader, `output show` and `verify` "
            "read the windows it names from there. Run again, it finds nothing left to do.\n"
        )
    cli(settings, "upgrade", "backfill")
    if one_table:
        show_history(table_location(str(work / "data")))
    else:
        show_backfills(settings.parent / "data" / "output")
    say(
        "The history as a reader sees it: every window has users. The generation column "
        "still says whose events each row counts.\n"
    )
    cli(settings, "output", "show", "--limit", "20")


def show_backfills(output: Path) -> None:
    """The output directory after a backfill: its rows and commit beside the generations'."""
    say(f"Beside the generations' directories ({output}), the backfill's own:\n")
    for directory in sorted(
        output.iterdir(), key=lambda path: (path.name.startswith("backfill"), path.name)
    ):
        commit_file = directory / "_backfill.json"
        if not commit_file.is_file():
            print(f"  {directory.name}/  written by generation {directory.name.split('-')[1]}")
            continue
        commit = json.loads(commit_file.read_text())
        ends = ", ".join(
            f"after {_clock(part['after_ms'])} through {_clock(part['through_ms'])}"
            for part in commit["ranges"]
        )
        print(
            f"  {directory.name}/    {len(commit['files'])} files, {commit['rows']} rows; "
            f"_backfill.json: the {commit['windows']} windows ending {ends}, by generation "
            f"{commit['generation']}'s query"
        )
    print(flush=True)


def show_history(table: str) -> None:
    """The table's commits, as delta-rs reads its log (Spark's DESCRIBE HISTORY says the same):
    one a batch, each marked with its generation and batch; a backfill's with the windows it
    owns (the whole record is in its userMetadata)."""
    from deltalake import DeltaTable

    say(
        f"The table's history ({table}), one commit a batch (and one a backfill), read with "
        "delta-rs:\n"
    )
    print(f"  {'version':>7}  {'operation':<9}  userMetadata")
    for commit in reversed(DeltaTable(table).history()):
        mark = commit.get("userMetadata")
        record = json.loads(mark) if mark else {}
        if "backfill" in record:
            ends = ", ".join(
                f"after {_clock(part['after_ms'])} through {_clock(part['through_ms'])}"
                for part in record["ranges"]
            )
            mark = (
                f"backfill {record['backfill']}: {record['rows']} rows, the "
                f"{record['windows']} windows ending {ends}, by generation "
                f"{record['generation']}'s query"
            )
        print(f"  {commit['version']:>7}  {commit['operation']:<9}  {mark}")
    print(flush=True)


Rows = list[dict[str, object]]


def check(settings: Path, times: Sequence[int]) -> tuple[int, Rows]:
    """Generation 1 + generation 2 against a count of every event, window by window; the
    exit code, and the rows read, for the contrast with the naive restart."""
    rows = _rows(settings)
    watermark = _watermark(settings)
    expected = _expected(times, watermark)
    written, twice = _written(rows)
    # The window open at the upgrade ends at 10:40: a generation 2 that never got past it
    # would leave nothing to check.
    reopened_end = BASE_MS + FIRST_EVENTS * EVENT_EVERY_MS
    if watermark < reopened_end:
        print(f"  FAILED: generation 2 stopped at {iso(watermark)}, before {iso(reopened_end)}")
        return 1, rows
    heading("Check", f"every window ending at or before {iso(watermark)}, counted from the events")
    print(f"  windows written by generation 1: {_count(rows, 1)}")
    print(f"  windows written by generation 2: {_count(rows, 2)}")
    print(f"  windows written twice:           {len(twice)}")
    print(f"  events counted:                  {sum(written.values())} of {sum(expected.values())}")
    if written == expected and not twice:
        print("  OK: no event lost, no window written twice.")
        return 0, rows
    missing = sorted((expected - written).items())[:5]
    extra = sorted((written - expected).items())[:5]
    print(f"  FAILED: missing {missing}, extra {extra}, twice {twice[:5]}")
    return 1, rows


def compare_naive(upgraded: Path, upgrade_rows: Rows, naive: Path, times: Sequence[int]) -> int:
    """Version 1's windows and the naive restart's, against a count of every event; beside
    them, the upgrade's. 0 when the naive restart lost something and the upgrade did not."""
    version_1 = [row for row in upgrade_rows if row["generation"] == 1]
    naive_rows = [*version_1, *_rows(naive)]
    expected = _expected(times, _watermark(upgraded))
    naive_written, naive_twice = _written(naive_rows)
    upgrade_written, upgrade_twice = _written(upgrade_rows)
    keys = sorted(set(expected) | set(naive_written))
    short = [key for key in keys if naive_written.get(key, 0) != expected.get(key, 0)]
    print(f"  {'window (UTC)':<13}  {'article':<7}  events  {'naive restart':<16}  upgrade")
    for key in short:
        start, article = key
        events, naive_count = expected.get(key, 0), naive_written.get(key, 0)
        lost = (
            f"{naive_count} (lost {events - naive_count})"
            if naive_count < events
            else str(naive_count)
        )
        window = f"{_clock(start)}-{_clock(start + WINDOW_MS)}"
        print(
            f"  {window:<13}  {article:<7}  {events:>6}  {lost:<16}  {upgrade_written.get(key, 0)}"
        )
    naive_lost = sum(max(0, expected[key] - naive_written.get(key, 0)) for key in expected)
    upgrade_lost = sum(max(0, expected[key] - upgrade_written.get(key, 0)) for key in expected)
    print(
        f"\n  naive restart: lost {naive_lost} events in "
        f"{sum(1 for key in short if naive_written.get(key, 0) < expected.get(key, 0))} windows, "
        f"written twice {len(naive_twice)}"
    )
    print(f"  upgrade:       lost {upgrade_lost}, written twice {len(upgrade_twice)}")
    return 0 if naive_lost > 0 and upgrade_lost == 0 and not upgrade_twice else 1


def _rows(settings: Path) -> Rows:
    """Every committed row of every generation, read here without Spark: each generation's
    files as its own sink log names them (a Delta table: with delta-rs). The check is the
    demo's own, independent of `output show`, and starts no JVM."""
    config = tomllib.loads(settings.read_text())
    root, file_format = config["pipeline"]["root"], config["sink"]["format"]
    rows: Rows = []
    if SINKS[file_format].one_table:
        from deltalake import DeltaTable

        rows = DeltaTable(table_location(root)).to_pyarrow_table().to_pylist()
    else:
        for output in FileSink(root, file_format).outputs():
            for uri in output.files:
                for row in pq.read_table(unquote(urlparse(uri).path)).to_pylist():
                    rows.append({**row, "generation": output.generation})
    return [{**row, "window_start": _iso(row["window_start"])} for row in rows]


def _iso(moment: object) -> str:
    """A timestamp as `output show --json` writes it; Spark's parquet holds UTC."""
    if not isinstance(moment, datetime):
        raise TypeError(f"window_start is {moment!r}, not a timestamp")
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _watermark(settings: Path) -> int:
    """W of the current generation's last committed batch, from `checkpoint show`."""
    state = json.loads(cli(settings, "checkpoint", "show", "--json", quiet=True))
    return int(state["last_committed"]["batch_watermark_ms"])


def _expected(times: Sequence[int], watermark: int) -> Counter[tuple[int, str]]:
    """Events per window and article, for every window ending at or before ``watermark``:
    counted from the events produced, independently of the pipeline."""
    expected: Counter[tuple[int, str]] = Counter()
    for i, time_ms in enumerate(times):
        start = time_ms - time_ms % WINDOW_MS
        if start + WINDOW_MS <= watermark:
            expected[(start, ARTICLES[i % len(ARTICLES)])] += 1
    return expected


def _written(
    rows: Sequence[dict[str, object]],
) -> tuple[Counter[tuple[int, str]], list[tuple[int, str]]]:
    """Views per window and article in ``rows``, and the windows written more than once."""
    written: Counter[tuple[int, str]] = Counter()
    seen: Counter[tuple[int, str]] = Counter()
    for row in rows:
        key = (epoch_ms(str(row["window_start"])), str(row["article_id"]))
        written[key] += int(str(row["views"]))
        seen[key] += 1
    return written, sorted(key for key, count in seen.items() if count > 1)


def _clock(epoch: int) -> str:
    return datetime.fromtimestamp(epoch / 1000, tz=UTC).strftime("%H:%M")


def _count(rows: Rows, generation: int) -> int:
    """Windows (and keys) ``generation`` wrote."""
    return len(
        {
            (row["window_start"], row["article_id"])
            for row in rows
            if row["generation"] == generation
        }
    )


def write_settings(
    work: Path,
    name: str,
    source: dict[str, str],
    *,
    users: bool,
    root: Path | None = None,
    starting_offsets: str = "earliest",
    pipeline_name: str | None = None,
) -> Path:
    """A settings file for one version; only [aggregation.metrics] differs between them.
    The naive restart has a pipeline name and a root of its own, and starts at offsets."""
    topic = source["topic"]
    root = root or work / "data"
    ledger = dict(override.split("=", 1) for override in pipelines.ledger_overrides(work))
    metrics = 'views = "count(*)"\n' + ('users = "approx_count_distinct(user_id)"\n' * users)
    path = work / name
    path.write_text(
        f"""[pipeline]
name = {json.dumps(pipeline_name or topic)}
root = {json.dumps(str(root))}
state_partitions = 2

[kafka]
bootstrap_servers = {json.dumps(source["bootstrap_servers"])}
topics = [{json.dumps(topic)}]
connector = {json.dumps(source["connector"])}
starting_offsets = {json.dumps(starting_offsets)}
max_offsets_per_trigger = {RATE_LIMIT}

[window]
duration = "10 minutes"
slide = ""
watermark_delay = "5 minutes"

[sink]
format = {json.dumps(source["sink"])}

[aggregation]
keys = ["article_id"]

[aggregation.metrics]
{metrics}
[ledger]
store = {json.dumps(ledger["ledger.store"])}
location = {json.dumps(ledger["ledger.location"])}
"""
    )
    return path


def cli(
    settings: Path, *args: str, expect: int = 0, quiet: bool = False, quiet_output: bool = False
) -> str:
    """Run the pipeline's CLI with these settings, echo it like a shell, return its stdout
    (``quiet_output``: echo the command and its exit code, not what it printed)."""
    shown = " ".join(shlex.quote(arg) for arg in args)
    command = [sys.executable, "-m", MODULE, "--config", str(settings), *args]
    echoed = f"{PACKAGE} --config {settings.name} {shown}"
    if not quiet:
        print(f"$ {echoed}", flush=True)
    started = time.monotonic()
    lines: list[str] = []
    # stderr to a file: Spark can write more to it than a pipe holds while stdout is read.
    with (
        tempfile.TemporaryFile("w+") as stderr,
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=settings.parent
        ) as process,
    ):
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if not quiet and not quiet_output:
                print(line, end="", flush=True)
        process.wait()
        stderr.seek(0)
        errors = stderr.read()
    code = process.returncode
    # Spark's own warnings go to stderr; the command's error line is the one it names.
    mine = [line for line in errors.splitlines() if line.startswith(f"{PACKAGE}: ")]
    if not quiet:
        for line in mine:
            print(line)
        print(f"  (exit {code}, {time.monotonic() - started:.0f} s)\n", flush=True)
    if code != expect:
        raise StepFailedError(
            f"`{PACKAGE} {shown}` exited with {code}, expected {expect}:\n"
            + "\n".join(mine or errors.splitlines()[-20:])
        )
    return "".join(lines)


def heading(title: str, text: str) -> None:
    print(f"\n== {title}\n{text}\n", flush=True)


def say(text: str) -> None:
    print(text, flush=True)


def iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch_ms(text: str) -> int:
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


if __name__ == "__main__":
    sys.exit(main())
