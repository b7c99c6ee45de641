"""The SASL login: its password read from an environment variable or a file, never a file
of settings; a password written into pipeline.toml works, with one warning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pyspark_kafka_upgrade import cli
from pyspark_kafka_upgrade._adapters.kafka.connector import kafka_read_options, kafka_source_options
from pyspark_kafka_upgrade._adapters.kafka.credentials import CredentialsError, login_options
from pyspark_kafka_upgrade._core.settings import KafkaSettings, load_settings
from pyspark_kafka_upgrade._domain.errors import ConfigError
from pyspark_kafka_upgrade._domain.values.validation import InvalidValueError
from pyspark_kafka_upgrade._example.pipeline import PROJECT

SECRET = 's3cr3t-"quoted"-\\-value'
# The same, as a JAAS line quotes it: a backslash before each quote and each backslash.
ESCAPED = 's3cr3t-\\"quoted\\"-\\\\-value'
SCRAM_OPTIONS = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"}


@pytest.fixture(autouse=True)
def _no_local_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def kafka(**changes: Any) -> KafkaSettings:
    values: dict[str, Any] = {
        "bootstrap_servers": "broker:9093",
        "topics": ("views",),
        "connector": "builtin",
        "options": SCRAM_OPTIONS,
        "sasl_username": "pipeline",
        "sasl_password_env": "KAFKA_PASSWORD",
        **changes,
    }
    return KafkaSettings(**values)


def test_the_password_from_the_environment_makes_javas_jaas_line() -> None:
    options = login_options(kafka(), env={"KAFKA_PASSWORD": SECRET})
    assert options == {
        "kafka.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="pipeline" password="{ESCAPED}";'
        )
    }


def test_librdkafka_gets_the_same_login_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_PASSWORD", SECRET)
    settings = kafka(options={**SCRAM_OPTIONS, "sasl.mechanism": "PLAIN"})
    assert "PlainLoginModule" in kafka_read_options(settings)["kafka.sasl.jaas.config"]
    config = kafka_source_options(settings).client_config
    assert (config["sasl.username"], config["sasl.password"]) == ("pipeline", SECRET)


def test_the_password_file_loses_one_trailing_newline(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text(SECRET + "\n")
    settings = kafka(sasl_password_env="", sasl_password_file=str(secret))
    jaas = login_options(settings, env={})["kafka.sasl.jaas.config"]
    assert jaas.endswith(f'password="{ESCAPED}";')


@pytest.mark.parametrize(
    ("changes", "env", "complaint"),
    [
        ({}, {}, "names KAFKA_PASSWORD, which is not set"),
        ({}, {"KAFKA_PASSWORD": ""}, "environment variable KAFKA_PASSWORD is empty"),
        (
            {"sasl_password_env": "", "sasl_password_file": "/nonexistent/password"},
            {},
            "/nonexistent/password cannot be read: No such file or directory",
        ),
    ],
)
def test_a_password_that_cannot_be_read_is_one_line_without_a_traceback(
    changes: dict[str, str], env: dict[str, str], complaint: str
) -> None:
    with pytest.raises(CredentialsError, match=complaint) as caught:
        login_options(kafka(**changes), env=env)
    assert isinstance(caught.value, ConfigError)
    assert "\n" not in str(caught.value)


def test_no_login_adds_nothing() -> None:
    assert login_options(kafka(sasl_username="", sasl_password_env=""), env={}) == {}


@pytest.mark.parametrize(
    ("changes", "field", "complaint"),
    [
        ({"sasl_username": ""}, "sasl_username", "is required with sasl_password_env"),
        ({"sasl_password_file": "/p"}, "sasl_password_env", "not both"),
        ({"sasl_password_env": ""}, "sasl_username", "needs its password from"),
        (
            {"options": {**SCRAM_OPTIONS, "sasl.jaas.config": "x"}},
            "sasl_username",
            "give the login once",
        ),
        ({"options": {"security.protocol": "SASL_SSL"}}, "sasl_username", "GSSAPI"),
        (
            {"options": {"sasl.mechanism": "OAUTHBEARER"}},
            "sasl_username",
            "got OAUTHBEARER",
        ),
    ],
)
def test_a_login_that_does_not_add_up_is_refused_when_the_settings_load(
    changes: dict[str, Any], field: str, complaint: str
) -> None:
    with pytest.raises(InvalidValueError, match=complaint) as caught:
        kafka(**changes)
    assert caught.value.field == field


def test_config_show_names_where_the_password_is_not_what_it_is(tmp_path: Path) -> None:
    loaded = load_settings(
        PROJECT,
        env={},
        overrides=[
            "kafka.options.sasl.mechanism=SCRAM-SHA-512",
            "kafka.sasl_username=pipeline",
            "kafka.sasl_password_env=KAFKA_PASSWORD",
        ],
    )
    shown = dict((key, value) for key, value, _ in loaded.describe())
    assert shown["kafka.sasl_password_env"] == '"KAFKA_PASSWORD"'
    assert shown["kafka.sasl_username"] == '"pipeline"'
    assert loaded.warnings == ()


def test_a_password_in_the_config_file_is_used_with_one_warning(tmp_path: Path) -> None:
    config = tmp_path / "pipeline.toml"
    config.write_text(
        "[kafka.options]\n"
        '"sasl.mechanism" = "PLAIN"\n'
        '"sasl.jaas.config" = "org.apache.kafka.common.security.plain.PlainLoginModule '
        f'required username=\\"svc\\" password=\\"{SECRET[:6]}\\";"\n'
    )
    loaded = load_settings(PROJECT, config, env={})
    assert len(loaded.warnings) == 1
    warning = loaded.warnings[0]
    assert warning.startswith(
        f"{config} holds a Kafka password in kafka.options 'sasl.jaas.config'"
    )
    assert "kafka.sasl_password_env" in warning
    assert SECRET[:6] not in warning
    assert kafka_source_options(loaded.settings.kafka).client_config["sasl.password"] == SECRET[:6]


def test_the_same_password_set_on_the_command_line_draws_no_warning() -> None:
    loaded = load_settings(PROJECT, env={}, overrides=["kafka.options.sasl.password=from-a-flag"])
    assert loaded.warnings == ()


def test_every_command_prints_the_warning_once_and_shows_no_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pipeline.toml").write_text(
        '[kafka.options]\n"sasl.mechanism" = "PLAIN"\n"sasl.jaas.config" = '
        '"org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username=\\"svc\\" password=\\"hunter2-sentinel\\";"\n'
    )
    assert cli.main(PROJECT, ["config", "show"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"{PROJECT.command}: warning: pipeline.toml holds a Kafka password in kafka.options "
        "'sasl.jaas.config'; it is used, but keep secrets out of files: set "
        "kafka.sasl_username with kafka.sasl_password_env or kafka.sasl_password_file instead"
    ]
    assert "hunter2-sentinel" not in out + err
    assert '"sasl.jaas.config": "***"' in out
