"""Streaming query listeners that receive each progress event as its JSON text.

PySpark's own listener path converts every event into Python objects field by field, one
Py4J round trip per field: dozens per event, on the same two cores the batches run on. A
listener here asks the JVM once for the event's JSON (``StreamingQueryProgress.json``),
which is the same document ``query.lastProgress`` gives, and parses it in Python.

The wrapper hooks into ``StreamingQueryListener._jlistener``, the object PySpark registers
with the JVM in ``spark.streams.addListener``; ``removeListener`` finds the same object.
If a PySpark release drops that hook, ``addListener`` falls back to PySpark's own path,
which still reaches :meth:`JsonProgressListener.onQueryProgress`: slower, still correct.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from typing import Any, ClassVar

from pyspark.sql.streaming.listener import StreamingQueryListener


class JsonProgressListener(StreamingQueryListener):
    """Calls :meth:`on_progress` with each progress event as a dict."""

    @abstractmethod
    def on_progress(self, progress: dict[str, Any]) -> None: ...

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        # PySpark's conversion path, for a release without the _jlistener hook.
        self.on_progress(json.loads(event.progress.json))

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass

    @property
    def _jlistener(self) -> Any:
        from pyspark import SparkContext

        existing = getattr(self, "_json_jlistener", None)
        if existing is None:
            jvm: Any = SparkContext._jvm
            existing = jvm.PythonStreamingQueryListenerWrapper(_JsonBridge(self))
            self._json_jlistener = existing
        return existing


class _JsonBridge:
    """The Py4J side of the JVM's ``PythonStreamingQueryListener`` interface."""

    def __init__(self, listener: JsonProgressListener) -> None:
        self._listener = listener

    def onQueryStarted(self, jevent: Any) -> None:
        pass

    def onQueryProgress(self, jevent: Any) -> None:
        self._listener.on_progress(json.loads(jevent.progress().json()))

    def onQueryIdle(self, jevent: Any) -> None:
        pass

    def onQueryTerminated(self, jevent: Any) -> None:
        pass

    class Java:
        # Py4J reads this list to know which Java interface the object implements.
        implements: ClassVar[list[str]] = [
            "org.apache.spark.sql.streaming.PythonStreamingQueryListener"
        ]
