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
import importlib
import importlib.metadata
import importlib.util
import inspect
import sys
import tokenize
from importlib.abc import InspectLoader
from types import ModuleType

from pyspark_kafka_upgrade._adapters.sink.opening import open_sink
from pyspark_kafka_upgrade._core.query import aggregate_types
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.errors import ConfigError
from pyspark_kafka_upgrade._domain.records.signature import (
    OUTPUT_MODE,
    Aggregate,
    Column,
    EventColumn,
    PipelineSignature,
    SourceSignature,
)
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout


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
        sink_path=open_sink(settings.sink, layout.root).location(layout.generation),
        output_mode=OUTPUT_MODE,
        spark_version=spark_version or installed_spark_version(),
    )


def installed_spark_version() -> str:
    """The installed pyspark's version, without importing pyspark (a quarter of a second of
    `upgrade plan`'s downtime); a runtime that ships pyspark without its metadata (a
    cluster image) is asked the slow way."""
    try:
        return importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        import pyspark

        return str(pyspark.__version__)


# The project's modules that declare rather than compute: their changes are seen elsewhere
# (the events structurally, the defaults as settings) or are not the job's (the CLI).
_NOT_THE_QUERY = frozenset({"__init__", "__main__", "cli", "pipeline", "events"})


def query_digest(query: ModuleType | str) -> str:
    """``sha256:`` and 16 hex digits of the query's code: the query module and every module
    of the project's own package that it imports, as syntax trees without docstrings.

    Comments, blank lines, formatting and docstrings do not change it; any change to what
    the code does does. The tree is written out canonically (node names and the fields that
    hold something), so that the same code gives the same digest on every Python from 3.11.
    """
    query_name = query if isinstance(query, str) else query.__name__
    package = query_name.rpartition(".")[0]
    # Named relative to the project's package, the query module as "<query>": renaming the
    # package or loading the module under another name is no change to the code.
    named = {
        "<query>" if name == query_name else name.removeprefix(package + "."): tree
        for name, tree in _query_trees(query_name).items()
    }
    parts = [f"{name}\n{_canonical(tree)}" for name, tree in sorted(named.items())]
    return "sha256:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _query_trees(query_name: str) -> dict[str, ast.Module]:
    """The syntax trees of the query module and of the project modules it imports, by name,
    read from their files: none is imported (a query module imports Spark)."""
    package = query_name.rpartition(".")[0]
    trees: dict[str, ast.Module] = {}
    pending = [query_name]
    while pending:
        name = pending.pop()
        if name in trees:
            continue
        tree = ast.parse(_source(name))
        trees[name] = tree
        for imported in _imports(tree, name):
            last = imported.rpartition(".")[2]
            if (
                package
                and imported.startswith(package + ".")
                and last not in _NOT_THE_QUERY
                and _is_module(imported)
            ):
                pending.append(imported)
    return trees


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _source(name: str) -> str:
    try:
        # One loaded already (or from a file under a name of its own, as tests do) is read
        # through its module; any other through its loader, without running it.
        loaded = sys.modules.get(name)
        if loaded is not None:
            return inspect.getsource(loaded)
        spec = importlib.util.find_spec(name)
        loader = None if spec is None else spec.loader
        source = loader.get_source(name) if isinstance(loader, InspectLoader) else None
        if source is None and spec is not None and (spec.origin or "").endswith(".py"):
            # A loader that cannot give sources (pytest's assertion rewriter claims every
            # module of a plugin's distribution) still found the file.
            with tokenize.open(str(spec.origin)) as file:
                source = file.read()
        if source is None:
            raise OSError("no source file")
        return source
    except (OSError, TypeError, ImportError) as error:
        raise ConfigError(
            f"the source of the query module {name} cannot be read ({error}); install the "
            "project with its .py files"
        ) from None


def _imports(tree: ast.Module, importer: str) -> list[str]:
    """Modules ``tree`` imports, with ``from package import module`` named as a module."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = importer.rsplit(".", node.level)[0]
                base = f"{parent}.{base}" if base else parent
            found += [base, *(f"{base}.{alias.name}" for alias in node.names)]
    return found


# The library's public spelling of a name, and where 0.6 and before imported it from: the
# digest is taken of the old spelling, so that a query moving to the public API keeps the
# digest every ledger recorded (it is no change to what the code does).
_SPELLED_BEFORE_0_7 = {
    ("pyspark_kafka_upgrade", ("steps",)): "pyspark_kafka_upgrade.spark",
    ("pyspark_kafka_upgrade.steps", None): "pyspark_kafka_upgrade.spark.steps",
}


def _as_spelled_before(node: ast.ImportFrom) -> str | None:
    names = tuple(alias.name for alias in node.names)
    for (module, only), before in _SPELLED_BEFORE_0_7.items():
        if node.module == module and not node.level and only in (None, names):
            return before
    return None


def _canonical(node: object) -> str:
    """A node as its class name and the fields that hold something, recursively: what
    ``ast.dump`` writes, minus what Python versions differ on (empty and None fields)."""
    if isinstance(node, ast.AST):
        if _is_docstring(node):
            return ""
        if isinstance(node, ast.ImportFrom) and (before := _as_spelled_before(node)):
            node = ast.ImportFrom(module=before, names=node.names, level=node.level)
        fields = [
            f"{name}={_canonical(value)}"
            for name, value in ast.iter_fields(node)
            if value is not None
            and value != []
            and not (isinstance(node, ast.Constant) and name == "kind")
        ]
        return f"{type(node).__name__}({','.join(fields)})"
    if isinstance(node, list):
        return "[" + ",".join(part for part in map(_canonical, node) if part) + "]"
    return repr(node)


def _is_docstring(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )
