"""Jinja additions for this template, loaded by cookiecutter through `_extensions`.

- ``template_root``: the template's absolute directory. Cookiecutter's own ``_repo_dir`` is
  relative when the template is given as a relative path (``cookiecutter .``), and hooks
  run from inside the new project, so they could not find the template's files from it.
- ``library_version``: the version of the library in this checkout (``library/``), which a
  generated project pins.
- ``toml_string``: a value as a TOML basic string. Jinja's ``tojson`` writes characters
  beyond the Basic Multilingual Plane as surrogate pairs (``\\ud83d\\udcc8``), which TOML
  refuses, so an emoji in a description would make pyproject.toml unreadable.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from jinja2 import Environment
from jinja2.ext import Extension


def toml_string(value: object) -> str:
    # JSON escapes quotes, backslashes and control characters below U+0020 the way TOML
    # does; TOML also requires DEL to be escaped, which JSON leaves alone.
    return json.dumps(str(value), ensure_ascii=False).replace("\x7f", "\\u007f")


def library_version(root: Path) -> str:
    init = root / "library" / "src" / "pyspark_kafka_upgrade" / "__init__.py"
    found = re.search(r'^__version__ = "([^"]+)"$', init.read_text(encoding="utf-8"), re.M)
    if found is None:
        raise ValueError(f"{init} does not set __version__")
    return found.group(1)


class TemplateHelpers(Extension):
    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        root = Path(__file__).resolve().parent
        environment.globals["template_root"] = str(root)
        environment.globals["library_version"] = library_version(root)
        environment.filters["toml_string"] = toml_string
