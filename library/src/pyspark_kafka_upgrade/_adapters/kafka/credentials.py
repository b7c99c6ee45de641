"""The SASL login's password, read where the settings say, when a command connects.

The settings name an environment variable or a file, never the secret, so ``config show``,
the plan file and the ledger have nothing to hide. The password lives only in the client
options handed to the connectors: Java's JAAS line, which librdkafka gets translated
(``options``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pyspark_kafka_upgrade._core.settings import KafkaSettings
from pyspark_kafka_upgrade._domain.errors import ConfigError

JAAS_CONFIG = "kafka.sasl.jaas.config"
# Java's login module per SASL mechanism whose login is a user and a password.
LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


class CredentialsError(ConfigError):
    """The password cannot be read where the settings say; the message never holds it."""


def login_options(kafka: KafkaSettings, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``kafka.sasl.jaas.config`` for ``kafka.sasl_username``, or nothing without a login."""
    if not kafka.sasl_username:
        return {}
    password = read_password(kafka, os.environ if env is None else env)
    # Settings validation guarantees one of the password mechanisms.
    module = LOGIN_MODULES[kafka.sasl_mechanism]
    return {
        JAAS_CONFIG: (
            f'{module} required username="{_quoted(kafka.sasl_username)}" '
            f'password="{_quoted(password)}";'
        )
    }


def read_password(kafka: KafkaSettings, env: Mapping[str, str]) -> str:
    if kafka.sasl_password_env:
        name = kafka.sasl_password_env
        password = env.get(name)
        if password is None:
            raise CredentialsError(
                f"kafka.sasl_password_env names {name}, which is not set in this process's "
                "environment"
            )
        where = f"environment variable {name}"
    else:
        path = Path(kafka.sasl_password_file).expanduser()
        try:
            # One trailing newline is the file's, not the password's (echo, editors).
            password = path.read_text(encoding="utf-8").removesuffix("\n").removesuffix("\r")
        except OSError as error:
            raise CredentialsError(
                f"kafka.sasl_password_file {path} cannot be read: {error.strerror}"
            ) from None
        except UnicodeDecodeError:
            raise CredentialsError(f"kafka.sasl_password_file {path} is not UTF-8 text") from None
        where = f"file {path}"
    if not password:
        raise CredentialsError(f"the Kafka password in {where} is empty")
    return password


def _quoted(text: str) -> str:
    # The JAAS parser takes backslash escapes inside double quotes.
    return text.replace("\\", "\\\\").replace('"', '\\"')
