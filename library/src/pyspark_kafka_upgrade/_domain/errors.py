"""Errors a user can act on.

Each carries one line that says what is wrong and what to do; the CLI prints that line and
exits with the error's code instead of showing a traceback.
"""

from __future__ import annotations


class PipelineError(Exception):
    """Base for every error this pipeline raises on purpose."""

    exit_code = 1


class ConfigError(PipelineError):
    """A setting is missing, unknown or has a value that breaks a rule."""

    exit_code = 2
