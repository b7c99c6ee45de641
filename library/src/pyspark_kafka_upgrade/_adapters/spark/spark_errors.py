"""Spark's error text made one line a user can act on.

Spark's messages carry a Python traceback from its workers and a JVM stack; the cause is
their last ``SomethingError: ...`` line. The CLI and the run both report errors this way.
A failure to read one file is also told apart (:func:`failed_file`), so that a reader of the
output can say which committed file it was.
"""

from __future__ import annotations

import re

from pyspark_kafka_upgrade._domain.records.damage import FileReadFailure

# A Py4JJavaError's text puts the Java exception after ": " and its causes after "Caused by: ".
_CAUSE_LINE = re.compile(r"^(?:Caused by: |: )?(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.+)$")


def cause(error: BaseException) -> str:
    """The most specific one-line cause in a Spark error's text, at most 500 characters."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    causes = [match for line in lines if (match := _CAUSE_LINE.match(line))]
    if causes:
        name, message = causes[-1].groups()
        return f"{name}: {message}"[:500]
    return (lines[0] if lines else type(error).__name__)[:500]


# The error classes Spark raises when one file cannot be read (4.0 to 4.3): the file is named
# in the message, after "file" ("Encountered error while reading file file:/x/part-0.parquet.
# Could not read footer.", "Could not read footer for file: ...", "Path does not exist: ...").
_FILE_ERROR = re.compile(
    r"\[(?P<error_class>FAILED_READ_FILE(?:\.\w+)?|CANNOT_READ_FILE_FOOTER|PATH_NOT_FOUND)\]"
    r"[^\n]*?(?:file:? |exist: )(?P<path>\S+?)\.?(?:\s|$)"
)
# Spark's ORC reader lets Hadoop's own error through, with no error class, when it reads a
# file's schema on the driver (measured on 4.2); its exception's name stands for the class.
_UNCLASSIFIED = re.compile(
    r"(?P<error_class>ChecksumException): Checksum error: (?P<path>\S+) at \d+"
)
# Causes below Spark's error that say the file is not there, or not for this user.
_MISSING = ("FILE_NOT_EXIST", "PATH_NOT_FOUND", "FileNotFoundException")
_DENIED = ("AccessDeniedException", "Permission denied")
# What says the bytes themselves are wrong. Any other cause of a failed read (a throttled or
# dropped request to an object store) says nothing about the file: raised as it is, never
# reported as damage.
_DAMAGED = (
    "CANNOT_READ_FILE_FOOTER",
    "ChecksumException",
    "is not a Parquet file",
    "magic number",
    "Malformed ORC file",
    "EOFException",
)


def failed_file(error: BaseException) -> FileReadFailure | None:
    """The file a Spark error says it could not read, or None when it is about something else.

    Spark's errors reach Python as a ``Py4JJavaError`` (``SparkException`` is not converted)
    or a ``PySparkException`` (``AnalysisException``); both carry the error class and the
    Java causes in their text, which is all this reads, so it imports neither.
    """
    text = str(error)
    found = _FILE_ERROR.search(text) or _UNCLASSIFIED.search(text)
    if found is None:
        return None
    path = found.group("path")
    # Spark spells the file file:/x in one line and file:///x in the next: drop any spelling.
    name = re.escape(path.rstrip("/").rsplit("/", 1)[-1])
    reason = re.sub(rf"\S*{name}\S*", "", cause(error))
    # The error class is said once, in its own field; the SQL state tells a user nothing.
    reason = " ".join(re.sub(r"\[[A-Z_.]+\] |\s*SQLSTATE: \w+", "", reason).split())
    reason = reason.removeprefix(f"{found.group('error_class')}: ")
    below = text[found.end() :]
    said = found.group(0) + below
    if not any(marker in said for marker in (*_MISSING, *_DENIED, *_DAMAGED)):
        return None
    return FileReadFailure(
        path=path,
        error_class=found.group("error_class"),
        cause=reason[:300],
        missing=any(marker in said for marker in _MISSING),
        denied=any(marker in below for marker in _DENIED),
    )
