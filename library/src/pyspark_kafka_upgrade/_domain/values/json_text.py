"""JSON text parsed where text that is no JSON must fail with a one-line error of the caller's
kind: a plan file, a checkpoint line, an offsets option each name their own."""

from __future__ import annotations

import json
from collections.abc import Callable


def json_value(text: str, refuse: Callable[[json.JSONDecodeError], Exception]) -> object:
    """``text`` parsed. Text that is no JSON raises what ``refuse`` makes of the decoder's
    error (its ``msg``, ``pos``, ``lineno`` and ``colno`` say where it breaks), without the
    decoder's traceback: the one line is the whole message."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise refuse(error) from None


def json_object(
    text: str,
    refuse: Callable[[json.JSONDecodeError], Exception],
    refuse_other: Callable[[], Exception],
) -> dict[str, object]:
    """``text`` parsed as a JSON object: ``refuse`` as for :func:`json_value`, and what
    ``refuse_other`` makes when it holds JSON of another kind (an array, a number)."""
    value = json_value(text, refuse)
    if not isinstance(value, dict):
        raise refuse_other()
    return value
