"""The Kafka connectors a job can read with: the one list the settings, the stream reader
and the template's hooks read.

Each reads the same options into the same columns (see ``connector``). Adding one is its
source, one entry here and one option among the template's choices; a template test holds
the two lists together. Standard library only: the template's hook loads this file as is.
"""

from __future__ import annotations

from typing import Literal, get_args

Connector = Literal["python", "builtin"]
CONNECTORS: tuple[Connector, ...] = get_args(Connector)
# The name each is registered under with spark.readStream.format().
SOURCE_FORMATS: dict[Connector, str] = {"python": "pykafka", "builtin": "kafka"}
