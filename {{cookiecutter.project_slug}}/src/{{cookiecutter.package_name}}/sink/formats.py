"""The file formats the sink writes: the one list the settings, the writer, the output reader
and the template's hooks read.

Adding a format Spark's file sink writes (json, csv, ...) is one line here and one option
among the template's choices; a template test holds the two lists together. The
format's files must end in ``.<format>``, which is how the reader tells the format of a
generation's output. Standard library only: the template's hook loads this file as is.
"""

from __future__ import annotations

from typing import Literal, get_args

SinkFormat = Literal["parquet", "orc"]
SINK_FORMATS: tuple[SinkFormat, ...] = get_args(SinkFormat)
