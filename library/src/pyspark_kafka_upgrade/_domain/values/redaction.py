"""Keep secrets out of logs, error messages and ``config show``.

Pure: standard library only. Connection strings and Kafka client options are the two
places secrets live in this pipeline's settings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

MASK = "***"
_SECRET_KEY_WORDS = ("password", "secret", "jaas", "token", "credential", "private")
# The password runs to the authority's last "@": an unescaped "@" inside it is still masked.
_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/?#@\s]*:)[^/\s]*(?=@)")
_KEYWORD_PASSWORD = re.compile(r"(?P<head>\b(?:ssl)?password\s*=\s*)('[^']*'|\S+)", re.IGNORECASE)


def is_secret_key(key: str) -> bool:
    lowered = key.lower()
    # kafka.sasl_password_env and _file say where a secret is, not what it is.
    if lowered.endswith(("_env", "_file")):
        return False
    return any(word in lowered for word in _SECRET_KEY_WORDS)


def redact_text(text: str) -> str:
    """Mask passwords in URL-style (``user:pw@host``) and key=value connection strings."""
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
    return _KEYWORD_PASSWORD.sub(lambda m: m.group("head") + MASK, text)


def redact_value(key: str, value: object) -> object:
    """Redact ``value`` stored under ``key``; tables are redacted key by key."""
    if isinstance(value, Mapping):
        return {k: redact_value(f"{key}.{k}", v) for k, v in value.items()}
    if is_secret_key(key):
        return MASK
    if isinstance(value, str):
        return redact_text(value)
    return value
