"""A plan as a file a person reviews: written whole or not at all, read back exactly.

The file is the plan's JSON, indented, keys in the plan's own order, so a diff of two plans
reads line by line. Every way a file can fail to be a plan this version applies is one
``PlanFileError`` line naming the file; the caller changes nothing after one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pyspark_kafka_upgrade._core.planner.plan_words import render_json
from pyspark_kafka_upgrade._domain.records.plan import UpgradePlan
from pyspark_kafka_upgrade._domain.records.record_errors import PlanFileError, PlanFormatError
from pyspark_kafka_upgrade._domain.values.json_text import json_object


def write_plan_file(path: Path, plan: UpgradePlan) -> None:
    """Write ``plan`` to ``path`` atomically: a reader sees the old file or the new one."""
    directory = path.parent if str(path.parent) else Path(".")
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                file.write(render_json(plan) + "\n")
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as error:
        raise PlanFileError(f"cannot write the plan to {path}: {error.strerror or error}") from None


def read_plan_file(path: Path) -> UpgradePlan:
    """The plan in ``path``; one PlanFileError line when it is not one this version applies."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlanFileError(
            f"no plan file at {path}: write one with `upgrade plan --out`"
        ) from None
    except IsADirectoryError:
        raise PlanFileError(f"{path} is a directory, not a plan file") from None
    except UnicodeDecodeError:
        raise PlanFormatError(f"{path} is not an upgrade plan: it is not UTF-8 text") from None
    except OSError as error:
        raise PlanFileError(f"cannot read {path}: {error.strerror or error}") from None
    document = json_object(
        text,
        lambda error: PlanFormatError(
            f"{path} is not an upgrade plan: not JSON ({error.msg} at line {error.lineno} "
            f"column {error.colno}); was it cut short or edited?"
        ),
        lambda: PlanFormatError(f"{path} is not an upgrade plan: its JSON is not an object"),
    )
    try:
        return UpgradePlan.from_json(document)
    except PlanFormatError as error:
        raise type(error)(f"{path}: {error}") from None
