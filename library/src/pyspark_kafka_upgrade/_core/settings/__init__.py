"""Typed settings, layered from the package's defaults, a TOML file, the environment and flags.

Later layers win: the project's ``defaults.toml`` (shipped in its package, written from the
template answers) < the config file < environment variables < ``--set section.key=value``.
Every value remembers where it came from, so an error names the exact place to fix. A TOML
value must already have its setting's type (``5`` is no host name); text from the
environment and flags is parsed into it.

``sections`` holds the records and their rules, ``files`` and ``text_sources`` read the
layers (``toml_types`` checks a file's types), ``loading`` merges and builds them.
"""

from pyspark_kafka_upgrade._core.settings.files import DEFAULT_CONFIG_FILE
from pyspark_kafka_upgrade._core.settings.loading import LoadedSettings, load_settings
from pyspark_kafka_upgrade._core.settings.sections import (
    PASSWORD_MECHANISMS,
    SECTIONS,
    AggregationSettings,
    EventsSettings,
    KafkaSettings,
    LedgerSettings,
    PipelineSettings,
    Settings,
    SinkSettings,
    WindowSettings,
)
from pyspark_kafka_upgrade._core.settings.sourced import SourcedValue

__all__ = [
    "DEFAULT_CONFIG_FILE",
    "PASSWORD_MECHANISMS",
    "SECTIONS",
    "AggregationSettings",
    "EventsSettings",
    "KafkaSettings",
    "LedgerSettings",
    "LoadedSettings",
    "PipelineSettings",
    "Settings",
    "SinkSettings",
    "SourcedValue",
    "WindowSettings",
    "load_settings",
]
