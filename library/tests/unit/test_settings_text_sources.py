"""Settings given as text, by the environment and ``--set`` (``settings.text_sources``):
parsed into their types, and one line when they do not parse."""

import pytest

from pyspark_kafka_upgrade import cli
from pyspark_kafka_upgrade._core.settings import load_settings
from pyspark_kafka_upgrade._domain.errors import ConfigError
from pyspark_kafka_upgrade._example.pipeline import PROJECT


def test_text_from_the_environment_and_flags_is_still_parsed() -> None:
    prefix = PROJECT.env_prefix
    settings = load_settings(
        PROJECT,
        env={
            # Text is what a variable holds: a number is a host's text here.
            f"{prefix}KAFKA__BOOTSTRAP_SERVERS": "5",
            f"{prefix}PIPELINE__STATE_PARTITIONS": " 16 ",
            f"{prefix}KAFKA__OPTIONS": '{"request.timeout.ms": 30000}',
        },
        overrides=["kafka.fail_on_data_loss=no", "aggregation.keys=article_id, user_id"],
    ).settings
    assert settings.kafka.bootstrap_servers == "5"
    assert settings.pipeline.state_partitions == 16
    assert settings.kafka.options == {"request.timeout.ms": "30000"}
    assert settings.kafka.fail_on_data_loss is False
    assert settings.aggregation.keys == ("article_id", "user_id")


@pytest.mark.parametrize(
    ("variable", "text", "line"),
    [
        (
            "PIPELINE__STATE_PARTITIONS",
            "8.5",
            "pipeline.state_partitions = '8.5' (from env <prefix>PIPELINE__STATE_PARTITIONS): "
            "must be a whole number",
        ),
        (
            "KAFKA__FAIL_ON_DATA_LOSS",
            "maybe",
            "kafka.fail_on_data_loss = 'maybe' (from env <prefix>KAFKA__FAIL_ON_DATA_LOSS): "
            "must be true or false",
        ),
        (
            "EVENTS__TIME_SOURCE",
            "Kafka",
            "events.time_source = 'Kafka' (from env <prefix>EVENTS__TIME_SOURCE): "
            "must be one of payload, kafka",
        ),
        (
            "KAFKA__OPTIONS",
            "security.protocol=SSL",
            "kafka.options = 'security.protocol=SSL' (from env <prefix>KAFKA__OPTIONS): "
            'must be a JSON object, e.g. {"security.protocol": "SSL"}',
        ),
        (
            "AGGREGATION__METRICS",
            '["count(*)"]',
            # As the variable holds it, not as its JSON reads.
            "aggregation.metrics = '[\"count(*)\"]' (from env <prefix>AGGREGATION__METRICS): "
            "must be a table of strings",
        ),
    ],
)
def test_text_from_the_environment_that_does_not_parse_is_one_line(
    variable: str, text: str, line: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(PROJECT, env={f"{PROJECT.env_prefix}{variable}": text})
    assert str(caught.value) == line.replace("<prefix>", PROJECT.env_prefix)
    assert caught.value.exit_code == 2


@pytest.mark.parametrize(
    ("override", "line"),
    [
        (
            "events.max_value_bytes=1e6",
            "events.max_value_bytes = '1e6' (from --set): must be a whole number",
        ),
        (
            "pipeline.local_storage_on_cluster=maybe",
            "pipeline.local_storage_on_cluster = 'maybe' (from --set): must be true or false",
        ),
        (
            "ledger.store=mysql",
            "ledger.store = 'mysql' (from --set): must be one of sqlite, postgres, filesystem",
        ),
    ],
)
def test_text_from_set_that_does_not_parse_is_one_line_and_exit_2(
    override: str, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(PROJECT, ["--set", override, "config", "show"]) == 2
    assert capsys.readouterr().err == f"{PROJECT.command}: error: {line}\n"
