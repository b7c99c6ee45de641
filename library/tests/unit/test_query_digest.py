"""The digest of a project's query code, which the pipeline's signature records: stable
across formatting and Python versions, and moved by any change to what the code does,
including in the project's own modules the query imports."""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyspark_kafka_upgrade._application.generation import signature
from pyspark_kafka_upgrade._application.generation.signature import query_digest

QUERY = '''"""The query."""

from pyspark_kafka_upgrade import steps

from shop import helpers
from shop.pipeline import PROJECT  # the declaration: not the query's code


def windowed_aggregates(raw, recipe):
    # a comment
    return helpers.keep_paid(steps.parse_events(raw, recipe))


def malformed_records(raw, recipe):
    """Its docstring."""
    return steps.quarantine_records(steps.parse_events(raw, recipe))
'''
HELPERS = """def keep_paid(frame):
    return frame.where("paid")
"""
# The digest of QUERY and HELPERS: the same on every Python this project supports, since the
# tree is written out canonically. A new value here means every recorded signature changes.
DIGEST = "sha256:efd15b03c3a403df"


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[Path]:
    package = tmp_path / "shop"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "pipeline.py").write_text("PROJECT = None\n")
    (package / "query.py").write_text(QUERY)
    (package / "helpers.py").write_text(HELPERS)
    sys.path.insert(0, str(tmp_path))
    yield package
    sys.path.remove(str(tmp_path))
    for name in [name for name in sys.modules if name == "shop" or name.startswith("shop.")]:
        del sys.modules[name]


def digest(package: Path, query: str = QUERY, helpers: str = HELPERS) -> str:
    (package / "query.py").write_text(query)
    (package / "helpers.py").write_text(helpers)
    for name in ("shop.query", "shop.helpers"):
        sys.modules.pop(name, None)
    importlib.invalidate_caches()
    return query_digest(importlib.import_module("shop.query"))


def test_the_digest_is_a_fixed_value(shop: Path) -> None:
    assert digest(shop) == DIGEST


@pytest.mark.parametrize(
    ("public", "before_0_7"),
    [
        (
            "from pyspark_kafka_upgrade import steps",
            "from pyspark_kafka_upgrade.spark import steps",
        ),
        (
            "from pyspark_kafka_upgrade.steps import Recipe",
            "from pyspark_kafka_upgrade.spark.steps import Recipe",
        ),
    ],
)
def test_moving_to_the_public_api_keeps_the_recorded_digest(public: str, before_0_7: str) -> None:
    # DIGEST above was recorded by 0.6 for the query importing from pyspark_kafka_upgrade.spark.
    assert signature._canonical(ast.parse(public)) == signature._canonical(ast.parse(before_0_7))
    other = "from pyspark_kafka_upgrade import Project"
    assert signature._canonical(ast.parse(other)) != signature._canonical(ast.parse(public))


def test_comments_docstrings_and_formatting_do_not_change_it(shop: Path) -> None:
    reworded = QUERY.replace("# a comment", "# another comment").replace(
        '"""Its docstring."""', '"""Another docstring."""'
    )
    reformatted = reworded.replace(
        "(steps.parse_events(raw, recipe))", "(\n        steps.parse_events(raw, recipe)\n    )"
    )
    assert digest(shop, reformatted) == DIGEST


def test_a_step_of_the_query_changes_it(shop: Path) -> None:
    assert digest(shop, QUERY.replace("helpers.keep_paid(", "(")) != DIGEST


def test_a_project_module_the_query_imports_is_part_of_it(shop: Path) -> None:
    assert digest(shop, helpers=HELPERS.replace('"paid"', '"paid and not test"')) != DIGEST


def test_the_declaration_modules_are_not(shop: Path) -> None:
    (shop / "pipeline.py").write_text("PROJECT = None  # version 2\nVERSION = '0.2.0'\n")
    assert digest(shop) == DIGEST


def test_the_spark_version_is_the_installed_pyspark_s_read_without_importing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.metadata

    import pyspark

    from pyspark_kafka_upgrade._application.generation.signature import installed_spark_version

    assert installed_spark_version() == pyspark.__version__

    # A cluster image may ship pyspark without its metadata: it is asked then.
    def no_metadata(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", no_metadata)
    assert installed_spark_version() == pyspark.__version__
