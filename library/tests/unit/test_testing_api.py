"""The public testing API: every name ``pyspark_kafka_upgrade.testing`` exports is one it
can import, from a module its lazy map names, and nothing else is exported."""

from __future__ import annotations

import importlib

import pytest

import pyspark_kafka_upgrade.testing as testing


def test_the_lazy_map_names_exactly_the_public_names() -> None:
    assert sorted(testing._WHERE) == sorted(testing.__all__)


@pytest.mark.parametrize("name", testing.__all__)
def test_every_public_name_is_what_its_module_defines(name: str) -> None:
    module = importlib.import_module(testing._WHERE[name])

    assert getattr(testing, name) is getattr(module, name)


def test_a_name_that_is_not_public_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'start_kafka_backend'"):
        _ = testing.start_kafka_backend
