"""The signature of the job the current code and settings build, derived without Spark.

`run` records it when a generation starts; `upgrade plan` and `apply` compare it with the one
the old generation recorded. It sees every change a team can make in its project: the
events it declares, the metrics, keys and window it sets, and its query module's code (as a
digest of its syntax tree, so that comments and formatting are not changes). The output
schema comes from ``aggregate_types``, whose table of Spark's type rules a unit test checks
against Spark itself, so no command needs a JVM for it. The Spark version is the running
session's when there is one, else the installed pyspark's.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
from types import ModuleType

import pyspark

from pyspark_kafka_upgrade.errors import ConfigError
from pyspark_kafka_upgrade.model.signature import (
    OUTPUT_MODE,
    Aggregate,
    Column,
    EventColumn,
    PipelineSignature,
    SourceSignature,
)
from pyspark_kafka_upgrade.query import aggregate_types
from pyspark_kafka_upgrade.settings import Settings
from pyspark_kafka_upgrade.values.layout import GenerationLayout


def derive_signature(
    settings: Settings, layout: GenerationLayout, *, spark_version: str | None = None
) -> PipelineSignature:
    """The signature of the job these settings build for ``layout``'s generation."""
    aggregation, project = settings.aggregation, settings.project
    schema = aggregate_types.output_schema(
        project.events,
        time_source=settings.events.time_source,
        time_field=settings.events.time_field,
        keys=aggregation.keys,
        metrics=aggregation.metric_specs,
    )
    return PipelineSignature(
        sources=(
            SourceSignature(
                kind="kafka",
                connector=settings.kafka.connector,
                topics=tuple(sorted(settings.kafka.topics)),
            ),
        ),
        events=tuple(EventColumn(e.name, e.type, e.required) for e in project.events),
        event_time_source=settings.events.time_source,
        event_time_field=settings.events.time_field,
        window=settings.window.spec,
        grouping_keys=tuple(aggregation.keys),
        aggregates=tuple(Aggregate(m.name, m.expression) for m in aggregation.metric_specs),
        output_schema=tuple(Column(name, type_) for name, type_ in schema),
        query=query_digest(project.query),
        sink_format=settings.sink.format,
        sink_path=layout.output,
        output_mode=OUTPUT_MODE,
        spark_version=spark_version or pyspark.__version__,
    )


def query_digest(module: ModuleType) -> str:
    """``sha256:`` and 16 hex digits of the query module's syntax tree, docstrings left out.

    Comments, blank lines, formatting and docstrings do not change it; any change to what
    the code does does. A new Python version may dump the same code differently: that reads
    as a change, which is the safe side.
    """
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError) as error:
        raise ConfigError(
            f"the source of the query module {module.__name__} cannot be read ({error}); "
            "install the project with its .py files"
        ) from None
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    dumped = ast.dump(tree, annotate_fields=False, include_attributes=False)
    return "sha256:" + hashlib.sha256(dumped.encode()).hexdigest()[:16]
