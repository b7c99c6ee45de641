from pathlib import Path

import pytest

from pyspark_kafka_upgrade._core.settings import load_settings
from pyspark_kafka_upgrade._domain.errors import ConfigError
from pyspark_kafka_upgrade._example.pipeline import PROJECT


@pytest.fixture(autouse=True)
def _no_local_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ./pipeline.toml is read when present; run where there is none.
    monkeypatch.chdir(tmp_path)


def test_defaults_come_from_the_projects_defaults_toml() -> None:
    loaded = load_settings(PROJECT, env={})
    settings = loaded.settings
    assert settings.pipeline.name == "page-views-pipeline"
    assert settings.kafka.topics == ("page-views",)
    assert settings.kafka.connector == "python"
    assert settings.window.duration == "10 minutes"
    assert settings.window.slide == ""
    assert settings.window.watermark_delay == "5 minutes"
    assert settings.sink.format == "parquet"
    assert settings.ledger.store == "sqlite"
    assert loaded.sources["kafka.topics"] == "package defaults"
    assert loaded.config_file is None


def test_layers_win_in_order_file_then_env_then_flags(tmp_path: Path) -> None:
    config = tmp_path / "prod.toml"
    config.write_text(
        '[kafka]\nbootstrap_servers = "file:9092"\ntopics = ["a", "b"]\n'
        '[sink]\ntrigger_interval = "1 minute"\n'
    )
    loaded = load_settings(
        PROJECT,
        config,
        env={
            f"{PROJECT.env_prefix}KAFKA__BOOTSTRAP_SERVERS": "env:9092",
            f"{PROJECT.env_prefix}SINK__FORMAT": "orc",
        },
        overrides=["sink.format=parquet", "kafka.max_offsets_per_trigger=500"],
    )
    settings = loaded.settings
    assert settings.kafka.bootstrap_servers == "env:9092"
    assert settings.kafka.topics == ("a", "b")
    assert settings.sink.trigger_interval == "1 minute"
    assert settings.sink.format == "parquet"
    assert settings.kafka.max_offsets_per_trigger == 500
    assert (
        loaded.sources["kafka.bootstrap_servers"]
        == f"env {PROJECT.env_prefix}KAFKA__BOOTSTRAP_SERVERS"
    )
    assert loaded.sources["kafka.topics"] == str(config)
    assert loaded.sources["sink.format"] == "--set"


def test_pipeline_toml_in_the_working_directory_is_read(tmp_path: Path) -> None:
    (tmp_path / "pipeline.toml").write_text('[pipeline]\nroot = "/srv/pipelines"\n')
    loaded = load_settings(PROJECT, env={})
    assert loaded.settings.pipeline.root == "/srv/pipelines"
    assert loaded.config_file == Path("pipeline.toml")


def test_env_names_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "other.toml"
    config.write_text('[pipeline]\nroot = "elsewhere"\n')
    loaded = load_settings(PROJECT, env={f"{PROJECT.env_prefix}CONFIG": str(config)})
    assert loaded.settings.pipeline.root == "elsewhere"


def test_types_are_coerced_from_text() -> None:
    settings = load_settings(
        PROJECT,
        env={f"{PROJECT.env_prefix}KAFKA__FAIL_ON_DATA_LOSS": "false"},
        overrides=["kafka.topics= a , b ", "kafka.options.security.protocol=SSL"],
    ).settings
    assert settings.kafka.fail_on_data_loss is False
    assert settings.kafka.topics == ("a", "b")
    assert settings.kafka.options == {"security.protocol": "SSL"}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["window.duration=10 minuts"], "window.duration = '10 minuts' (from --set): "),
        (
            ["window.slide=1 hour"],
            "window.slide = '1 hour' (from --set): window slide '1 hour' is longer",
        ),
        (
            ["kafka.topics=ok,bad topic"],
            "kafka.topics = 'ok,bad topic' (from --set): Kafka topic 'bad topic'",
        ),
        (["kafka.max_offsets_per_trigger=many"], "must be a whole number"),
        (["kafka.max_offsets_per_trigger=-5"], "must be 0 (no limit) or a positive number"),
        (["kafka.fail_on_data_loss=maybe"], "must be true or false"),
        (["kafka.connector=jvm"], "must be one of python, builtin"),
        (["sink.format=csv"], "must be one of parquet, orc"),
        (["pipeline.root= "], "pipeline.root = ' ' (from --set): must not be empty"),
        (["window.durations=1 minute"], "unknown setting window.durations in --set"),
        (["nosuch.key=1"], "unknown section 'nosuch'"),
        (["window.duration"], "expected section.key=value"),
    ],
)
def test_bad_values_give_one_line_naming_setting_value_and_source(
    overrides: list[str], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(PROJECT, env={}, overrides=overrides)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_mistyped_section_in_an_environment_variable_is_refused() -> None:
    variable = f"{PROJECT.env_prefix}KAFAK__TOPICS"
    with pytest.raises(ConfigError, match=f"environment variable {variable}: unknown section"):
        load_settings(PROJECT, env={variable: "x"})


def test_a_directory_as_config_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a file"):
        load_settings(PROJECT, tmp_path, env={})


def test_unknown_key_in_a_file_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "typo.toml"
    config.write_text('[window]\nwatermark = "1 minute"\n')
    with pytest.raises(ConfigError, match=r"unknown setting window.watermark in .*typo.toml"):
        load_settings(PROJECT, config, env={})


def test_invalid_toml_is_refused_with_its_position(tmp_path: Path) -> None:
    config = tmp_path / "broken.toml"
    config.write_text("[kafka\n")
    with pytest.raises(ConfigError, match=r"is not valid TOML: .*line 1"):
        load_settings(PROJECT, config, env={})


def test_missing_config_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(PROJECT, tmp_path / "absent.toml", env={})


def test_secrets_are_masked_when_described() -> None:
    loaded = load_settings(
        PROJECT,
        env={},
        overrides=[
            "ledger.location=postgresql://app:hunter2@db/ledger",
            "kafka.options.sasl.jaas.config=PlainLoginModule password=hunter2;",
        ],
    )
    described = repr(loaded.describe()) + repr(loaded.as_dict())
    assert "hunter2" not in described
    assert "postgresql://app:***@db/ledger" in described
