"""Jinja additions for this template, loaded by cookiecutter through `_extensions`.

- ``template_root``: the template's absolute directory. Cookiecutter's own ``_repo_dir`` is
  relative when the template is given as a relative path (``cookiecutter .``), and hooks
  run from inside the new project, so they could not find the template's files from it.
- ``toml_string``: a value as a TOML basic string. Jinja's ``tojson`` writes characters
  beyond the Basic Multilingual Plane as surrogate pairs (``\\ud83d\\udcc8``), which TOML
  refuses, so an emoji in a description would make pyproject.toml unreadable.
"""

from __future__ import annotations

import json
from pathlib import Path

from jinja2 import Environment
from jinja2.ext import Extension


def toml_string(value: object) -> str:
    # JSON escapes quotes, backslashes and control characters below U+0020 the way TOML
    # does; TOML also requires DEL to be escaped, which JSON leaves alone.
    return json.dumps(str(value), ensure_ascii=False).replace("\x7f", "\\u007f")


class TemplateHelpers(Extension):
    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        environment.globals["template_root"] = str(Path(__file__).resolve().parent)
        environment.filters["toml_string"] = toml_string
