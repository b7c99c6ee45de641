"""Refuse bad answers before cookiecutter writes a single file.

Answers arrive as one JSON document decoded at run time, never pasted into code, so a
quote, a backslash or template syntax in an answer is data here, not Python.
Exits 1 with one line per broken rule, each naming the field, the value and the rule.
"""

from __future__ import annotations

import importlib.util
import json
import keyword
import re
import sys
from pathlib import Path
from types import ModuleType

# Jinja's tojson escapes every ' as \u0027, so the raw string cannot be closed early.
ANSWERS: dict[str, object] = json.loads(r'''{{ cookiecutter | tojson }}''')  # fmt: skip
# Absolute, unlike ANSWERS["_repo_dir"], which is relative after `cookiecutter .`.
TEMPLATE_ROOT = Path(json.loads(r'''{{ template_root | tojson }}'''))  # fmt: skip

SLUG = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
PACKAGE = re.compile(r"[a-z_][a-z0-9_]*")
EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
# A generated package with one of these names would shadow what it imports.
RESERVED_PACKAGES = {
    # what the generated project imports at run time
    "pyspark", "py4j", "pyarrow", "confluent_kafka", "psycopg", "pyspark_kafka_upgrade",
    # what its tests and tools import
    "pytest", "_pytest", "hypothesis", "testcontainers", "docker", "noida_db", "kafka",
    "mypy", "ruff", "support", "bench", "test", "tests", "src",
}  # fmt: skip
# The sink formats, connectors and ledger stores are listed once, in the library's catalog,
# and read from there (see choices()); a template test holds cookiecutter.json to the same.
# The bundle is files, not package code: post_gen_project.py keeps or removes them.
BUNDLE_CHOICES = ("no", "yes")


# The library's rules, in two modules that import only the standard library (a library test
# holds its whole pure core to that): loaded by path, so that no answer is checked before
# the library is installed, and no rule is written twice.
LIBRARY_VALUES = TEMPLATE_ROOT / "library" / "src" / "pyspark_kafka_upgrade" / "_domain" / "values"


def load_library_module(name: str) -> ModuleType:
    """Load ``_domain/values/<name>.py`` of the library by path, without importing the library."""
    path = LIBRARY_VALUES / f"{name}.py"
    if not path.is_file():
        sys.exit(f"ERROR: template is broken: {path} is missing")
    spec = importlib.util.spec_from_file_location(f"template_library_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses resolve the module through sys.modules while the class is created.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def choices() -> dict[str, tuple[str, ...]]:
    catalog = load_library_module("catalog")
    return {
        "sink_format": catalog.SINK_FORMATS,
        "kafka_connector": catalog.CONNECTORS,
        "offset_store": catalog.STORE_NAMES,
    }


def text(field: str) -> str:
    value = ANSWERS.get(field, "")
    return value if isinstance(value, str) else str(value)


def check_single_line(field: str) -> str | None:
    value = text(field)
    if not value.strip():
        return f"{field}={value!r}: must not be empty"
    if any(ch in value for ch in "\r\n\t\x00"):
        return f"{field}={value!r}: must be a single line without tabs or control characters"
    return None


def check_slug() -> str | None:
    value = text("project_slug")
    if not SLUG.fullmatch(value):
        return (
            f"project_slug={value!r}: use lowercase letters, digits and single hyphens, "
            "starting with a letter (e.g. 'page-views-pipeline')"
        )
    return None


def check_package() -> str | None:
    value = text("package_name")
    if check_slug() and value == text("project_slug").replace("-", "_"):
        return None  # derived from a bad slug: the slug's error already says what to fix
    if not value.isidentifier() or not PACKAGE.fullmatch(value):
        return (
            f"package_name={value!r}: must be a lowercase Python identifier "
            "(letters, digits, underscores; not starting with a digit)"
        )
    if keyword.iskeyword(value) or keyword.issoftkeyword(value):
        return f"package_name={value!r}: is a Python keyword"
    if value in sys.stdlib_module_names or value in RESERVED_PACKAGES:
        return f"package_name={value!r}: would shadow the module of the same name it imports"
    return None


def check_email() -> str | None:
    value = text("author_email")
    if not EMAIL.fullmatch(value):
        return f"author_email={value!r}: is not an e-mail address (e.g. 'team@example.com')"
    return None


def check_choices() -> list[str]:
    return [
        f"{field}={text(field)!r}: must be one of {', '.join(allowed)}"
        for field, allowed in choices().items()
        if text(field) not in allowed
    ]


def check_bundle() -> str | None:
    value = text("databricks_bundle")
    if value not in BUNDLE_CHOICES:
        return f"databricks_bundle={value!r}: must be one of {', '.join(BUNDLE_CHOICES)}"
    return None


# window_spec() names its fields without the prefix the template's answers use.
WINDOW_FIELDS = {
    "duration": "window_duration",
    "slide": "window_slide",
    "watermark_delay": "watermark_delay",
}


def check_topic(rules: ModuleType) -> str | None:
    try:
        rules.check_kafka_topic(text("kafka_topic"))
    except rules.InvalidValueError as error:
        return f"kafka_topic={text('kafka_topic')!r}: {error}"
    return None


def check_window(rules: ModuleType) -> str | None:
    try:
        rules.window_spec(text("window_duration"), text("window_slide"), text("watermark_delay"))
    except rules.InvalidValueError as error:
        field = WINDOW_FIELDS[error.field]
        return f"{field}={text(field)!r}: {error}"
    return None


def main() -> int:
    rules = load_library_module("validation")
    problems = [
        problem
        for problem in (
            check_single_line("project_name"),
            check_single_line("description"),
            check_single_line("author_name"),
            check_slug(),
            check_package(),
            check_email(),
            check_topic(rules),
            check_window(rules),
            check_bundle(),
        )
        if problem
    ]
    problems += check_choices()
    for problem in problems:
        print(f"ERROR: {problem}", file=sys.stderr)
    if problems:
        print("Nothing was generated. Fix the value(s) above and run again.", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
