from collections.abc import Mapping

import pytest

from pyspark_kafka_upgrade._adapters.kafka.kafka_errors import (
    SourceOptionError,
)
from pyspark_kafka_upgrade._adapters.kafka.options import (
    DEFAULT_POLL_TIMEOUT_MS,
    SourceOptions,
    StartFromOffsets,
    StartFromPosition,
    StartFromTimestamps,
    parse_options,
)
from pyspark_kafka_upgrade._domain.errors import (
    ConfigError,
)

REQUIRED = {"kafka.bootstrap.servers": "broker:9092", "subscribe": "views"}


def parse(**options: str) -> SourceOptions:
    # Spark lower-cases option names before a Python data source sees them.
    return parse_options({key.lower(): value for key, value in {**REQUIRED, **options}.items()})


def test_defaults_match_the_built_in_source() -> None:
    options = parse()
    assert options.bootstrap_servers == "broker:9092"
    assert options.topics == ("views",)
    assert options.pattern is None
    assert options.starting == StartFromPosition("latest")
    assert options.max_offsets_per_trigger is None
    assert options.fail_on_data_loss is True
    assert options.include_headers is False
    assert options.initial_offsets_location is None
    assert options.poll_timeout_ms == DEFAULT_POLL_TIMEOUT_MS
    assert options.client_config == {"bootstrap.servers": "broker:9092"}
    assert options.ending is None


def test_every_option_is_read() -> None:
    options = parse(
        subscribe=" views, clicks ,views",
        startingOffsets="EARLIEST",
        maxOffsetsPerTrigger="500",
        failOnDataLoss="False",
        includeHeaders="true",
        initialOffsetsLocation="s3a://bucket/checkpoints/gen=1/sources/0/0",
        groupIdPrefix="team-a",
        **{"kafkaConsumer.pollTimeoutMs": "5000"},
    )
    assert options.topics == ("views", "clicks")
    assert options.starting == StartFromPosition("earliest")
    assert options.max_offsets_per_trigger == 500
    assert options.fail_on_data_loss is False
    assert options.include_headers is True
    assert options.initial_offsets_location == "s3a://bucket/checkpoints/gen=1/sources/0/0"
    assert options.group_id_prefix == "team-a"
    assert options.poll_timeout_ms == 5000


def test_json_starting_offsets_keep_earliest_and_latest_markers() -> None:
    options = parse(startingOffsets='{"views":{"0":-2,"1":-1,"2":42}}')
    assert options.starting == StartFromOffsets({"views": {0: -2, 1: -1, 2: 42}})


def test_ending_offsets_are_exact_offsets_per_partition() -> None:
    options = parse(
        startingOffsets='{"views":{"0":5,"1":0}}', endingOffsets='{"views":{"0":42,"1":0}}'
    )
    assert options.ending == {"views": {0: 42, 1: 0}}
    assert options.starting == StartFromOffsets({"views": {0: 5, 1: 0}})


def test_timestamps_take_precedence_as_in_the_built_in_source() -> None:
    by_partition = parse(
        startingOffsets="earliest", startingOffsetsByTimestamp='{"views":{"0":1700000000000}}'
    )
    assert by_partition.starting == StartFromTimestamps(
        {"views": {0: 1_700_000_000_000}}, None, "error"
    )
    everywhere = parse(
        startingTimestamp="1700000000000",
        startingOffsetsByTimestamp='{"views":{"0":5}}',
        startingOffsetsByTimestampStrategy="latest",
    )
    assert everywhere.starting == StartFromTimestamps(None, 1_700_000_000_000, "latest")


def test_pattern_subscription() -> None:
    options = parse_options({"kafka.bootstrap.servers": "b:1", "subscribepattern": r"views\..*"})
    assert options.topics == ()
    assert options.pattern == r"views\..*"


def test_kafka_options_go_to_the_client_without_prefix() -> None:
    options = parse(
        **{
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "PLAIN",
            "kafka.ssl.ca.location": "/etc/ca.pem",
            "kafka.sasl.jaas.config": (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                'username="svc" password="p\\"w";'
            ),
        }
    )
    assert options.client_config == {
        "bootstrap.servers": "broker:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "ssl.ca.location": "/etc/ca.pem",
        "sasl.username": "svc",
        "sasl.password": 'p"w',
    }


@pytest.mark.parametrize(
    ("options", "option", "complaint"),
    [
        ({"kafka.bootstrap.servers": " "}, "kafka.bootstrap.servers", "is required"),
        ({"subscribe": None}, "subscribe", "set exactly one of"),
        ({"subscribePattern": "v.*"}, "subscribe", "set exactly one of"),
        ({"subscribe": " , "}, "subscribe", "names no topic"),
        ({"subscribe": "bad topic"}, "subscribe", "may only contain"),
        ({"subscribe": None, "subscribePattern": "("}, "subscribePattern", "not a regular"),
        ({"startingOffsets": "newest"}, "startingOffsets", "'earliest', 'latest' or JSON"),
        ({"startingOffsets": '{"v":{"0":1'}, "startingOffsets", "is not valid JSON"),
        ({"startingOffsets": '{"v":{"0":-3}}'}, "startingOffsets", "offset -3 is negative"),
        ({"endingOffsets": '{"v":{"0":-1}}'}, "endingOffsets", "offset -1 is negative"),
        ({"endingOffsets": '{"v":{"0":7,"1":-2}}'}, "endingOffsets", "partition 1: offset -2"),
        ({"endingOffsets": "latest"}, "endingOffsets", "must be JSON like"),
        ({"endingOffsets": '{"v":{"0":'}, "endingOffsets", "is not valid JSON"),
        ({"startingOffsetsByTimestamp": '{"v":{"0":-1}}'}, "startingOffsetsByTimestamp", "neg"),
        ({"startingTimestamp": "yesterday"}, "startingTimestamp", "whole number"),
        ({"startingOffsetsByTimestampStrategy": "x"}, "startingOffsetsByTimestampStrategy", "or"),
        ({"maxOffsetsPerTrigger": "0"}, "maxOffsetsPerTrigger", "must be a positive number"),
        ({"maxOffsetsPerTrigger": "1e3"}, "maxOffsetsPerTrigger", "whole number"),
        ({"failOnDataLoss": "yes"}, "failOnDataLoss", "'true' or 'false'"),
        ({"initialOffsetsLocation": "rel/path"}, "initialOffsetsLocation", "absolute path"),
        ({"startingOffset": "earliest"}, "startingoffset", "is not an option of this source"),
        ({"assign": '{"v":[0]}'}, "assign", "does not support"),
        ({"kafka.auto.offset.reset": "earliest"}, "kafka.auto.offset.reset", "startingOffsets"),
        ({"kafka.enable.auto.commit": "true"}, "kafka.enable.auto.commit", "never commits"),
        ({"kafka.sasl.jaas.config": "x required;"}, "kafka.sasl.jaas.config", "PlainLogin"),
    ],
)
def test_a_bad_option_is_named(
    options: Mapping[str, str | None], option: str, complaint: str
) -> None:
    merged = {**REQUIRED, **options}
    raw = {key.lower(): value for key, value in merged.items() if value is not None}
    with pytest.raises(SourceOptionError, match=complaint) as caught:
        parse_options(raw)
    assert caught.value.option == option
    assert str(caught.value).startswith(f"option {option!r}: ")
    assert isinstance(caught.value, ConfigError)


def test_a_password_is_never_echoed() -> None:
    jaas = 'com.example.CustomModule required username="u" password="hunter2";'
    with pytest.raises(SourceOptionError) as caught:
        parse(**{"kafka.sasl.jaas.config": jaas})
    assert "hunter2" not in str(caught.value)


def test_a_java_pem_truststore_becomes_librdkafkas_ca_location() -> None:
    # One set of kafka.* options serves both connectors: Java's names, translated here.
    options = parse(
        **{
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.location": "/etc/kafka/ca.pem",
            "kafka.ssl.endpoint.identification.algorithm": "",
        }
    )
    assert options.client_config == {
        "bootstrap.servers": "broker:9092",
        "ssl.ca.location": "/etc/kafka/ca.pem",
        "ssl.endpoint.identification.algorithm": "none",
    }
    inline = parse(
        **{"kafka.ssl.truststore.type": "pem", "kafka.ssl.truststore.certificates": "-----B"}
    )
    assert inline.client_config["ssl.ca.pem"] == "-----B"


@pytest.mark.parametrize("kind", [None, "JKS", "PKCS12"])
def test_a_truststore_librdkafka_cannot_read_is_refused_with_the_way_out(
    kind: str | None,
) -> None:
    options = {"kafka.ssl.truststore.location": "/etc/kafka/truststore.jks"}
    if kind is not None:
        options["kafka.ssl.truststore.type"] = kind
    with pytest.raises(SourceOptionError, match="read PEM only") as caught:
        parse(**options)
    assert caught.value.option == "kafka.ssl.truststore.type"
    assert "keytool -exportcert -rfc" in str(caught.value)
