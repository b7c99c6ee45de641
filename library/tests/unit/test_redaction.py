import pytest

from pyspark_kafka_upgrade._domain.values.redaction import redact_text, redact_value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgresql://app:s3cr3t@db:5432/x", "postgresql://app:***@db:5432/x"),
        ("postgresql://app@db/x", "postgresql://app@db/x"),
        ("postgresql://app:p@ss@db/x?a=b@c", "postgresql://app:***@db/x?a=b@c"),
        ("host=db sslpassword=k3y password=pw", "host=db sslpassword=*** password=***"),
        ("host=db user=app password=s3cr3t dbname=x", "host=db user=app password=*** dbname=x"),
        ("host=db password='with space' dbname=x", "host=db password=*** dbname=x"),
        ("data/ledger.sqlite", "data/ledger.sqlite"),
    ],
)
def test_masks_passwords_in_connection_strings(text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_masks_secret_client_options_key_by_key() -> None:
    options = {
        "security.protocol": "SASL_SSL",
        "sasl.jaas.config": 'PlainLoginModule required password="pw";',
        "ssl.key.password": "pw",
    }
    assert redact_value("kafka.options", options) == {
        "security.protocol": "SASL_SSL",
        "sasl.jaas.config": "***",
        "ssl.key.password": "***",
    }
