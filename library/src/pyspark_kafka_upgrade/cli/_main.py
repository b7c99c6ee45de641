"""One command, start to end: parse, load the settings, run it, and say what happened.

Every error a user can act on ends the command with one line and its exit code, not a
traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from pyspark_kafka_upgrade._domain.errors import ConfigError, PipelineError
from pyspark_kafka_upgrade._domain.values.outcome import Outcome
from pyspark_kafka_upgrade._domain.values.validation import InvalidValueError
from pyspark_kafka_upgrade.cli._parser import parse_args

if TYPE_CHECKING:
    from pyspark_kafka_upgrade._domain.values.project import Project


def console(project: Project) -> NoReturn:
    """A project's console script: exit with :func:`main`'s code.

    It raises rather than returns because some launchers ignore a return value: Databricks'
    python_wheel_task calls the entry point and would report a refused command as a success.
    """
    raise SystemExit(main(project))


def main(project: Project, argv: Sequence[str] | None = None) -> int:
    """Run one command of ``project``'s CLI; the exit code."""
    prog = project.command
    args = parse_args(project, argv)
    # Only now: --help and a usage error need no settings.
    from pyspark_kafka_upgrade._application import config_show

    try:
        loaded = config_show.load(project, args.config, args.overrides)
        for warning in loaded.warnings:
            print(f"{prog}: warning: {warning}", file=sys.stderr)
        result = args.handler(args, loaded)
        if isinstance(result, Outcome):
            print(result.text)
            return result.exit_code
        print(result)
        return 0
    except BrokenPipeError:
        # The reader went away (`config show | head`): not an error worth a traceback.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stays open until exit
        return 0
    except PipelineError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return error.exit_code
    except InvalidValueError as error:
        # A setting that passed its own checks but does not fit the job (e.g. a grouping key
        # the event schema lacks), found when the job is planned.
        print(f"{prog}: error: {error}", file=sys.stderr)
        return ConfigError.exit_code
    except _spark_errors() as error:
        # Py4JJavaError: the Java exceptions PySpark does not convert (SparkException among
        # them) would otherwise end the command with pages of Java and Python stack.
        from pyspark_kafka_upgrade._adapters.spark.spark_errors import cause

        print(f"{prog}: error: Spark: {cause(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130


def _spark_errors() -> tuple[type[Exception], ...]:
    """PySpark's and Py4J's errors, once a command has loaded Spark; before, none can occur.

    An ``except`` clause evaluates its types only when an exception reaches it, so the
    commands that never start Spark never import it.
    """
    if "pyspark" not in sys.modules:
        return ()
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException

    return (PySparkException, Py4JError)
