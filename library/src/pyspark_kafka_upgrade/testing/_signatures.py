"""What ``upgrade plan`` and ``run`` see of a project: its signature, and their verdicts on an
edit, checked without Spark or Kafka.

A project's test edits a copy of its own query or events, and asks::

    edited = with_query_source(PROJECT, source.replace(step, ""), tmp_path)
    assert advice(PROJECT, edited).verdict is Verdict.NEEDS_NEW_CHECKPOINT
    assert "Run `upgrade plan`" in run_refusal(PROJECT, edited, tmp_path)
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from dataclasses import replace
from pathlib import Path

from pyspark_kafka_upgrade._adapters.ledger.sqlite_store import SqliteOffsetStore
from pyspark_kafka_upgrade._application.generation.signature import derive_signature
from pyspark_kafka_upgrade._application.run.bookkeeping import record_generation
from pyspark_kafka_upgrade._core.planner.advisor import advise
from pyspark_kafka_upgrade._core.settings import load_settings
from pyspark_kafka_upgrade._domain.errors import PipelineError
from pyspark_kafka_upgrade._domain.records.advice import Advice
from pyspark_kafka_upgrade._domain.records.signature import PipelineSignature
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout
from pyspark_kafka_upgrade._domain.values.project import Project

ROOT = "file:/pipeline"


def signature_of(project: Project, *overrides: str) -> PipelineSignature:
    """The signature ``run`` records for generation 1 of ``project`` with ``overrides``."""
    settings = load_settings(project, env={}, overrides=overrides).settings
    return derive_signature(settings, GenerationLayout(ROOT, 1), spark_version="4.2.0")


def advice(
    old: Project,
    new: Project,
    old_settings: tuple[str, ...] = (),
    new_settings: tuple[str, ...] = (),
) -> Advice:
    """What ``upgrade plan`` says of moving from ``old`` with ``old_settings`` (overrides,
    ``section.key=value``) to ``new`` with ``new_settings``."""
    return advise(
        signature_of(old, *old_settings).to_json(), signature_of(new, *new_settings).to_json()
    )


def run_refusal(old: Project, new: Project, tmp_path: Path) -> str | None:
    """The line ``run`` refuses ``new`` with on a checkpoint ``old`` wrote; None: it runs."""
    layout = GenerationLayout(ROOT, 1)
    with SqliteOffsetStore(tmp_path / "ledger.sqlite") as store:
        record_generation(store, "proof", layout, None, signature_of(old))
        existing = store.generation("proof", 1)
        try:
            record_generation(store, "proof", layout, existing, signature_of(new))
        except PipelineError as refused:
            return str(refused)
    return None


def query_source(project: Project) -> str:
    return inspect.getsource(project.query_module())


def with_query_source(project: Project, source: str, tmp_path: Path) -> Project:
    """``project`` with its query module replaced by ``source``, loaded from a file."""
    path = tmp_path / "edited_query.py"
    path.write_text(source, encoding="utf-8")
    name = f"edited_query_{abs(hash(source))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return replace(project, query=module)
