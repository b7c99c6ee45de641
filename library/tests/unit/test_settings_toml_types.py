"""A config file's values checked against their settings' types (``settings.toml_types``):
one line naming the setting, the file, the type and the fix."""

import dataclasses
from pathlib import Path

import pytest

from pyspark_kafka_upgrade import cli
from pyspark_kafka_upgrade._core.settings import SECTIONS, load_settings
from pyspark_kafka_upgrade._domain.errors import ConfigError
from pyspark_kafka_upgrade._example.pipeline import PROJECT


@pytest.fixture(autouse=True)
def _no_local_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ./pipeline.toml is read when present; run where there is none.
    monkeypatch.chdir(tmp_path)


# A TOML file types every value, so a value of another type than its setting's is refused,
# never converted: (setting, TOML value, the whole line; <file> is where it was written).
# Each setting has a case at least; the kinds (text, whole number, true/false, a choice, an
# array of text, a table of text) have one per way of getting them wrong.
WRONG_TYPES_IN_A_FILE = [
    (
        "pipeline.name",
        "5",
        'pipeline.name = 5 (from <file>): must be text, e.g. "page-views-pipeline"; '
        "write it in quotes",
    ),
    (
        "pipeline.root",
        "2024-01-01",
        'pipeline.root = 2024-01-01 (from <file>): must be text, e.g. "data"; write it in quotes',
    ),
    (
        "pipeline.state_partitions",
        '"8"',
        'pipeline.state_partitions = "8" (from <file>): must be a whole number, e.g. 8; '
        "write it without quotes",
    ),
    (
        "pipeline.state_partitions",
        "8.0",
        "pipeline.state_partitions = 8.0 (from <file>): must be a whole number, e.g. 8; write 8",
    ),
    (
        "pipeline.state_partitions",
        "8.5",
        "pipeline.state_partitions = 8.5 (from <file>): must be a whole number, e.g. 8",
    ),
    (
        "pipeline.local_storage_on_cluster",
        '"true"',
        'pipeline.local_storage_on_cluster = "true" (from <file>): must be true or false; '
        "write it without quotes",
    ),
    (
        "pipeline.local_storage_on_cluster",
        "1",
        "pipeline.local_storage_on_cluster = 1 (from <file>): must be true or false",
    ),
    (
        "kafka.bootstrap_servers",
        "5",
        'kafka.bootstrap_servers = 5 (from <file>): must be text, e.g. "localhost:9092"; '
        "write it in quotes",
    ),
    (
        "kafka.bootstrap_servers",
        '["a:9092", "b:9092"]',
        'kafka.bootstrap_servers = ["a:9092", "b:9092"] (from <file>): must be text, '
        'e.g. "localhost:9092"; write "a:9092,b:9092"',
    ),
    (
        "kafka.topics",
        '"a, b"',
        'kafka.topics = "a, b" (from <file>): must be an array of text, e.g. ["page-views"]; '
        'write ["a", "b"]',
    ),
    (
        "kafka.topics",
        '["a", 5]',
        'kafka.topics = ["a", 5] (from <file>): must be an array of text, e.g. ["page-views"]; '
        'write ["a", "5"]',
    ),
    (
        "kafka.topics",
        '["a", ["b"]]',
        'kafka.topics = ["a", ["b"]] (from <file>): must be an array of text, '
        'e.g. ["page-views"]; item 2 is an array, not text',
    ),
    (
        "kafka.connector",
        "1",
        'kafka.connector = 1 (from <file>): must be one of "python", "builtin"',
    ),
    (
        "kafka.starting_offsets",
        '{page-views = {"0" = 42}}',
        "kafka.starting_offsets = {page-views = {0 = 42}} (from <file>): must be text, "
        'e.g. "earliest"; write the offsets as JSON in single quotes: '
        """'{"page-views":{"0":42}}'""",
    ),
    (
        "kafka.max_offsets_per_trigger",
        "true",
        "kafka.max_offsets_per_trigger = true (from <file>): must be a whole number, e.g. 10000",
    ),
    (
        "kafka.fail_on_data_loss",
        '"false"',
        'kafka.fail_on_data_loss = "false" (from <file>): must be true or false; '
        "write it without quotes",
    ),
    (
        "kafka.options",
        '{"ssl.truststore.certificates" = ["a", "b"]}',
        'kafka.options."ssl.truststore.certificates" = ["a", "b"] (from <file>): must be text, '
        'e.g. "30000"; one text, not an array',
    ),
    (
        # Unquoted, the dots make tables: {"security": {"protocol": "SSL"}}.
        "kafka.options",
        '{security.protocol = "SSL"}',
        'kafka.options.security = {protocol = "SSL"} (from <file>): must be text; '
        'a name with dots needs quotes: "security.protocol" = "SSL"',
    ),
    (
        # The environment's spelling of a table, in a file.
        "kafka.options",
        """'{"security.protocol": "SSL"}'""",
        r'kafka.options = "{\"security.protocol\": \"SSL\"}" (from <file>): must be a table '
        'of text, e.g. {"request.timeout.ms" = "30000"}; write a TOML table, not JSON text: '
        '{"security.protocol" = "SSL"}',
    ),
    (
        "kafka.sasl_username",
        "true",
        'kafka.sasl_username = true (from <file>): must be text, e.g. "pipeline"; '
        "write it in quotes",
    ),
    (
        "kafka.sasl_password_env",
        '["KAFKA_PASSWORD"]',
        'kafka.sasl_password_env = ["KAFKA_PASSWORD"] (from <file>): must be text, '
        'e.g. "KAFKA_PASSWORD"; one text, not an array',
    ),
    (
        "kafka.sasl_password_file",
        '{path = "/run/password"}',
        'kafka.sasl_password_file = {path = "/run/password"} (from <file>): must be text, '
        'e.g. "/var/run/secrets/kafka/password"; one text, not a table',
    ),
    (
        "window.duration",
        "10",
        'window.duration = 10 (from <file>): must be text, e.g. "10 minutes"; write it in quotes',
    ),
    (
        "window.watermark_delay",
        "5.0",
        'window.watermark_delay = 5.0 (from <file>): must be text, e.g. "5 minutes"; '
        "write it in quotes",
    ),
    (
        "window.slide",
        "false",
        'window.slide = false (from <file>): must be text, e.g. "5 minutes"; write it in quotes',
    ),
    (
        "events.time_source",
        '"Kafka"',
        'events.time_source = "Kafka" (from <file>): must be one of "payload", "kafka"',
    ),
    (
        "events.time_field",
        "12:00:00",
        'events.time_field = 12:00:00 (from <file>): must be text, e.g. "event_time"; '
        "write it in quotes",
    ),
    (
        "events.max_value_bytes",
        "1e6",
        "events.max_value_bytes = 1000000.0 (from <file>): must be a whole number, "
        "e.g. 262144; write 1000000",
    ),
    (
        "aggregation.keys",
        '"article_id"',
        'aggregation.keys = "article_id" (from <file>): must be an array of text, '
        'e.g. ["article_id"]; write ["article_id"]',
    ),
    (
        "aggregation.metrics",
        "{views = 1}",
        'aggregation.metrics.views = 1 (from <file>): must be text, e.g. "count(*)"; '
        "write it in quotes",
    ),
    (
        "aggregation.metrics",
        '["count(*)"]',
        'aggregation.metrics = ["count(*)"] (from <file>): must be a table of text, '
        'e.g. {views = "count(*)"}',
    ),
    (
        "sink.format",
        '["parquet"]',
        'sink.format = ["parquet"] (from <file>): must be one of "parquet", "orc", "delta"',
    ),
    (
        "sink.trigger_interval",
        "10",
        'sink.trigger_interval = 10 (from <file>): must be text, e.g. "10 seconds"; '
        "write it in quotes",
    ),
    (
        "sink.table_location",
        "false",
        "sink.table_location = false (from <file>): must be text, e.g. "
        '"s3://bucket/pipelines/page-views/table"; write it in quotes',
    ),
    (
        "sink.table_name",
        '["main", "analytics", "page_view_counts"]',
        'sink.table_name = ["main", "analytics", "page_view_counts"] (from <file>): must be '
        'text, e.g. "main.analytics.page_view_counts"; one text, not an array',
    ),
    (
        "ledger.store",
        "0",
        'ledger.store = 0 (from <file>): must be one of "sqlite", "postgres", "filesystem"',
    ),
    (
        "ledger.location",
        "1979-05-27T07:32:00Z",
        "ledger.location = 1979-05-27T07:32:00+00:00 (from <file>): must be text, "
        'e.g. "data/ledger.sqlite"; write it in quotes',
    ),
]


def _write_setting(path: Path, setting: str, toml_value: str) -> Path:
    section, key = setting.split(".")
    path.write_text(f"[{section}]\n{key} = {toml_value}\n")
    return path


def test_every_setting_has_a_wrong_type_case() -> None:
    every = {
        f"{section}.{f.name}"
        for section, section_type in SECTIONS.items()
        for f in dataclasses.fields(section_type)
    }
    assert every - {setting for setting, _, _ in WRONG_TYPES_IN_A_FILE} == set()


@pytest.mark.parametrize(
    ("setting", "toml_value", "line"),
    WRONG_TYPES_IN_A_FILE,
    ids=[f"{setting}={value}" for setting, value, _ in WRONG_TYPES_IN_A_FILE],
)
def test_a_wrong_type_in_a_file_is_one_line_naming_setting_source_type_and_fix(
    tmp_path: Path, setting: str, toml_value: str, line: str
) -> None:
    config = _write_setting(tmp_path / "pipeline.toml", setting, toml_value)
    with pytest.raises(ConfigError) as caught:
        load_settings(PROJECT, config, env={})
    assert str(caught.value) == line.replace("<file>", str(config))
    assert caught.value.exit_code == 2


# How each type's refusal begins; other rules (a value too small, a partner missing) do not.
TYPE_RULES = (
    "must be text",
    "must be a whole number",
    "must be true or false",
    "must be one of",
    "must be an array of text",
    "must be a table of text",
)


EXAMPLES_GIVEN = [
    (setting, line)
    for setting, _, line in WRONG_TYPES_IN_A_FILE
    if line.startswith(f"{setting} = ") and ", e.g. " in line
]


@pytest.mark.parametrize(
    ("setting", "line"), EXAMPLES_GIVEN, ids=[setting for setting, _ in EXAMPLES_GIVEN]
)
def test_the_example_a_wrong_type_is_answered_with_has_the_right_type(
    tmp_path: Path, setting: str, line: str
) -> None:
    example = line.split(", e.g. ", 1)[1].split("; ", 1)[0]
    config = _write_setting(tmp_path / "example.toml", setting, example)
    try:
        load_settings(PROJECT, config, env={})
    except ConfigError as error:
        # e.g. kafka.sasl_username alone: it needs a password's source too.
        rule = str(error).split("): ", 1)[1]
        assert not rule.startswith(TYPE_RULES), str(error)


def test_the_users_report_bootstrap_servers_5_stops_the_cli_with_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pipeline.toml").write_text("[kafka]\nbootstrap_servers = 5\n")
    assert cli.main(PROJECT, ["config", "show"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"{PROJECT.command}: error: kafka.bootstrap_servers = 5 (from pipeline.toml): "
        'must be text, e.g. "localhost:9092"; write it in quotes\n'
    )


def test_a_wrong_type_in_the_package_defaults_names_them() -> None:
    defaults = PROJECT.defaults.replace("state_partitions = 8", 'state_partitions = "8"')
    assert defaults != PROJECT.defaults
    with pytest.raises(ConfigError) as caught:
        load_settings(dataclasses.replace(PROJECT, defaults=defaults), env={})
    assert str(caught.value) == (
        'pipeline.state_partitions = "8" (from package defaults): must be a whole number, '
        "e.g. 8; write it without quotes"
    )


def test_a_wrong_type_in_a_file_is_refused_even_where_the_environment_overrides_it(
    tmp_path: Path,
) -> None:
    config = _write_setting(tmp_path / "pipeline.toml", "kafka.bootstrap_servers", "5")
    with pytest.raises(ConfigError, match=r"^kafka.bootstrap_servers = 5 \(from .*pipeline"):
        load_settings(
            PROJECT, config, env={f"{PROJECT.env_prefix}KAFKA__BOOTSTRAP_SERVERS": "b:9092"}
        )


def test_a_file_value_breaking_a_rule_is_shown_as_toml(tmp_path: Path) -> None:
    config = _write_setting(tmp_path / "pipeline.toml", "kafka.topics", '["ok", "bad topic"]')
    with pytest.raises(ConfigError) as caught:
        load_settings(PROJECT, config, env={})
    assert str(caught.value).startswith(
        f'kafka.topics = ["ok", "bad topic"] (from {config}): Kafka topic \'bad topic\''
    )


def test_right_types_in_a_file_load_as_written(tmp_path: Path) -> None:
    config = tmp_path / "pipeline.toml"
    config.write_text(
        "[pipeline]\nstate_partitions = 4\nlocal_storage_on_cluster = true\n"
        '[kafka]\nbootstrap_servers = "b:9092"\ntopics = [" a ", "b", ""]\n'
        'connector = "builtin"\nmax_offsets_per_trigger = 1_000\n'
        '[kafka.options]\n"request.timeout.ms" = "30000"\n"linger.ms" = 5\n'
        '"enable.idempotence" = true\n"retry.backoff.ms" = 100.0\n'
        '[aggregation.metrics]\nviews = "count(*)"\n'
    )
    settings = load_settings(PROJECT, config, env={}).settings
    assert settings.pipeline.state_partitions == 4
    assert settings.pipeline.local_storage_on_cluster is True
    assert settings.kafka.topics == ("a", "b")
    assert settings.kafka.connector == "builtin"
    assert settings.kafka.max_offsets_per_trigger == 1000
    # Kafka reads every option as text; bare numbers and booleans are written as text.
    assert settings.kafka.options == {
        "request.timeout.ms": "30000",
        "linger.ms": "5",
        "enable.idempotence": "true",
        "retry.backoff.ms": "100.0",
    }
    assert settings.aggregation.metrics == {"views": "count(*)"}
