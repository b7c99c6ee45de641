"""Every document the library writes, pinned byte for byte, and read back where it is read.

The expected texts in ``support/json_formats`` were written by the hand-written methods these
documents had before they shared one mechanism (``_domain.values.json_record``): a change to
one of them is a change of format, which needs a format version (or, for a key added within
a version, a reader that takes documents without it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import support.json_samples as samples
from pyspark_kafka_upgrade._adapters.storage.run_lock import LockRecord
from pyspark_kafka_upgrade._application.checkpoint_show.render import render_report
from pyspark_kafka_upgrade._application.output_show import render_output
from pyspark_kafka_upgrade._core.planner.plan_words import render_json
from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.records.damage import DamagedFile
from pyspark_kafka_upgrade._domain.records.ledger import BatchRecord, GenerationRecord, LedgerGap
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.signature import PipelineSignature
from pyspark_kafka_upgrade._domain.records.verification import VerifyReport

FORMATS = Path(__file__).parent.parent / "support" / "json_formats"


def _indented(document: object) -> str:
    return json.dumps(document, indent=2) + "\n"


# What each pinned file holds, as the library writes it: the document `--json` prints, or
# (for the ledger's records and the parts of a plan) the document a store keeps.
WRITTEN: dict[str, Callable[[], str]] = {
    "batch_record": lambda: _indented(samples.batch_record().to_json()),
    "first_batch_record": lambda: _indented(samples.first_batch_record().to_json()),
    "generation_record": lambda: _indented(samples.generation_record().to_json()),
    "first_generation_record": lambda: _indented(samples.first_generation_record().to_json()),
    "ledger_gap": lambda: _indented(samples.ledger_gap().to_json()),
    "loose_ledger_gap": lambda: _indented(samples.loose_ledger_gap().to_json()),
    "signature": lambda: _indented(samples.signature().to_json()),
    "signature_without_history": lambda: _indented(samples.signature_without_history().to_json()),
    "plan": lambda: render_json(samples.plan()) + "\n",
    "unscanned_plan": lambda: render_json(samples.unscanned_plan()) + "\n",
    "damaged_file": lambda: _indented(samples.damaged_file().to_json()),
    "verify_report": lambda: _indented(samples.verify_report().to_json()),
    "open_verify_report": lambda: _indented(samples.open_verify_report().to_json()),
    "restart_plan": lambda: _indented(samples.restart_plan().to_json()),
    "plain_restart_plan": lambda: _indented(samples.plain_restart_plan().to_json()),
    "late_records": lambda: _indented(samples.late_records().to_json()),
    "checkpoint_report": lambda: render_report(samples.checkpoint_report(), as_json=True) + "\n",
    "bare_checkpoint_report": lambda: (
        render_report(samples.bare_checkpoint_report(), as_json=True) + "\n"
    ),
    "output_report": lambda: render_output(samples.output_report(), as_json=True) + "\n",
    "lock_record": lambda: samples.lock_record().to_json().decode(),
    "connector_jars": lambda: _indented(samples.connector_jars().to_json()),
}

# The documents read back, by the file that holds them: each reads as the sample it came from.
READ: dict[str, tuple[Callable[[str], object], Callable[[], object]]] = {
    "batch_record": (lambda text: BatchRecord.from_json(json.loads(text)), samples.batch_record),
    "first_batch_record": (
        lambda text: BatchRecord.from_json(json.loads(text)),
        samples.first_batch_record,
    ),
    "generation_record": (
        lambda text: GenerationRecord.from_json(json.loads(text)),
        samples.generation_record,
    ),
    "first_generation_record": (
        lambda text: GenerationRecord.from_json(json.loads(text)),
        samples.first_generation_record,
    ),
    "ledger_gap": (lambda text: LedgerGap.from_json(json.loads(text)), samples.ledger_gap),
    "loose_ledger_gap": (
        lambda text: LedgerGap.from_json(json.loads(text)),
        samples.loose_ledger_gap,
    ),
    "signature": (lambda text: PipelineSignature.from_json(json.loads(text)), samples.signature),
    "signature_without_history": (
        lambda text: PipelineSignature.from_json(json.loads(text)),
        samples.signature_without_history,
    ),
    "plan": (lambda text: UpgradePlan.from_json(json.loads(text)), samples.plan),
    "unscanned_plan": (
        lambda text: UpgradePlan.from_json(json.loads(text)),
        samples.unscanned_plan,
    ),
    "damaged_file": (lambda text: DamagedFile.from_json(json.loads(text)), samples.damaged_file),
    "verify_report": (lambda text: VerifyReport.from_json(json.loads(text)), samples.verify_report),
    "open_verify_report": (
        lambda text: VerifyReport.from_json(json.loads(text)),
        samples.open_verify_report,
    ),
    "lock_record": (lambda text: LockRecord.from_json(text.encode()), samples.lock_record),
}


def test_every_pinned_file_is_a_written_document() -> None:
    assert sorted(path.stem for path in FORMATS.glob("*.json")) == sorted(WRITTEN)


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_a_document_is_written_exactly_as_pinned(name: str) -> None:
    assert WRITTEN[name]() == (FORMATS / f"{name}.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(READ))
def test_a_pinned_document_reads_as_the_record_that_wrote_it(name: str) -> None:
    read, sample = READ[name]
    assert read((FORMATS / f"{name}.json").read_text(encoding="utf-8")) == sample()


def _changed(name: str, path: tuple[str | int, ...], value: object) -> object:
    """The pinned document ``name`` with the value at ``path`` replaced."""
    document = json.loads((FORMATS / f"{name}.json").read_text(encoding="utf-8"))
    container = document
    for step in path[:-1]:
        container = container[step]
    container[path[-1]] = value
    return document


# The one line each document is refused with where its field is not what this version reads:
# newer and impossible versions, and every refusal worded otherwise than JsonFields words it.
REFUSALS: list[tuple[str, tuple[str | int, ...], object, str]] = [
    (
        "plan",
        ("format_version",),
        2,
        "the plan has format version 2, newer than the 1 this version of the pipeline reads: "
        "apply it with the version that wrote it",
    ),
    ("plan", ("format_version",), 0, "upgrade plan format version 0 does not exist"),
    (
        "plan",
        ("partitions", 0, "kind"),
        "sideways",
        "upgrade plan partition kind 'sideways' is not one this version knows",
    ),
    (
        "plan",
        ("advice", "verdict"),
        "maybe",
        "advice verdict 'maybe' is not one of same, safe, needs_new_checkpoint",
    ),
    (
        "plan",
        ("to_signature", "window"),
        [],
        "upgrade plan field 'to_signature': signature window must be a JSON object",
    ),
    (
        "signature",
        ("format_version",),
        3,
        "the signature has format version 3, newer than the 2 this version of the library "
        "reads: upgrade pyspark-kafka-upgrade",
    ),
    (
        "signature",
        ("history",),
        {},
        "signature has no field 'history.max_watermark_delay_ms'",
    ),
    (
        "generation_record",
        ("status",),
        "paused",
        "generation record field 'status' is 'paused', expected one of planned, running, retired",
    ),
    (
        "verify_report",
        ("format_version",),
        2,
        "the verify report has format version 2, newer than the 1 this version of the library "
        "reads",
    ),
    ("verify_report", ("format_version",), 0, "verify report format_version 0 is not one"),
    (
        "verify_report",
        ("generations",),
        "1,2",
        "verify report field 'generations' must be a JSON list, got str",
    ),
    (
        "verify_report",
        ("generations",),
        ["1"],
        "verify report field 'generations' must be a list of integers",
    ),
    (
        "verify_report",
        ("findings",),
        {},
        "verify report field 'findings' must be a JSON list, got dict",
    ),
    (
        "verify_report",
        ("findings", 0, "writers"),
        "1",
        "verify report field 'writers' must be a JSON list, got str",
    ),
    (
        "verify_report",
        ("findings", 0, "status"),
        "gone",
        "verify report field 'status' is 'gone', expected one of written twice, lost, "
        "different, unclassified, late by design, open, abandoned, exact",
    ),
    (
        "verify_report",
        ("findings", 1, "window_end_ms"),
        "later",
        "window finding field 'window_end_ms' must be an integer, got str",
    ),
    (
        "verify_report",
        ("counts", "lost"),
        -1,
        "verify report field 'counts' has -1 windows 'lost'; expected a count",
    ),
    ("verify_report", ("damaged", 1), [], "damaged file damaged[1] must be a JSON object"),
    (
        "verify_report",
        ("damaged", 0, "part"),
        "shelf",
        "damaged file field 'damaged[0].part' is 'shelf', expected one of committed file, "
        "sink log, output directory",
    ),
    (
        "damaged_file",
        ("damage",),
        "eaten",
        "damaged file field 'damage' is 'eaten', expected one of missing, wrong size, "
        "unreadable, no access",
    ),
]


@pytest.mark.parametrize(
    ("name", "path", "value", "message"),
    REFUSALS,
    ids=[f"{name}:{'.'.join(map(str, path))}" for name, path, _, _ in REFUSALS],
)
def test_a_document_this_version_cannot_read_is_refused_in_its_own_words(
    name: str, path: tuple[str | int, ...], value: object, message: str
) -> None:
    read, _ = READ[name]
    with pytest.raises(PipelineError) as refused:
        read(json.dumps(_changed(name, path, value)))
    assert str(refused.value) == message


def test_a_lock_file_of_another_format_is_not_a_lock() -> None:
    document = _changed("lock_record", ("format",), 2)
    with pytest.raises(ValueError) as refused:
        LockRecord.from_json(json.dumps(document).encode())
    assert str(refused.value) == "unknown format 2"
