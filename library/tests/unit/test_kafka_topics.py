"""Topic names for tests: unique, and made of what Kafka allows; the helpers that create,
fill and read topics run on a broker in tests/integration/test_kafka_backend_smoke.py."""

from __future__ import annotations

import pytest

from pyspark_kafka_upgrade.testing import unique_topic


@pytest.mark.parametrize("prefix", ["orders", "spark source/test", "ünïcode"])
def test_unique_topic_names_are_unique_and_valid(prefix: str) -> None:
    names = {unique_topic(prefix) for _ in range(100)}

    assert len(names) == 100
    for name in names:
        assert 0 < len(name) <= 249
        assert all(c.isascii() and (c.isalnum() or c in "._-") for c in name)
