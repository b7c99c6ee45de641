"""Spark's errors in one line, and which file a failed read names.

The texts are Spark 4.2's, as a ``Py4JJavaError`` prints them (shortened: the stack frames
between the lines that matter are cut), for committed output files damaged on purpose in
``tests/integration/test_verify.py``.
"""

from __future__ import annotations

import pytest

from pyspark_kafka_upgrade._adapters.spark.spark_errors import cause, failed_file
from pyspark_kafka_upgrade._domain.records.damage import Damage, FileReadFailure

FILE = (
    "/tmp/pipeline/output/generation-2/part-00000-47d3ed92-5c2f-4f0f-bd90-0cd6caab12b5-c000"
    ".snappy.parquet"
)
FOOTER = (
    "An error occurred while calling o3157.load.\n"
    ": org.apache.spark.SparkException: [FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER] Encountered "
    f"error while reading file file:{FILE}. Could not read footer. Please ensure that the file "
    "is in either ORC or Parquet format.\n"
    "If not, please convert it to a valid format. If the file is in the valid format, please "
    "check if it is corrupt.\n"
    "If it is, you can choose to either ignore it or fix the corruption. SQLSTATE: KD001\n"
    "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.cannotReadFooterForFileError("
    "QueryExecutionErrors.scala:1123)\n"
    "Caused by: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in "
    "stage 7.0 failed 1 times\n"
    "\t\tat org.apache.spark.executor.Executor$TaskRunner.run(Executor.scala:897)\n"
    "\t\t... 1 more\n"
)


def error(text: str) -> Exception:
    """Stands for a Py4JJavaError or a PySparkException: both are read as text."""
    return RuntimeError(text)


CHECKSUM = error(
    FOOTER + f"Caused by: org.apache.hadoop.fs.ChecksumException: Checksum error: file:{FILE} "
    "at 512 exp: 964203704 got: -772400197\n"
    "\tat org.apache.hadoop.fs.FSInputChecker.verifySums(FSInputChecker.java:352)\n"
)
DELETED = error(
    FOOTER + f"Caused by: java.io.FileNotFoundException: File file:{FILE} does not exist\n"
    "\tat org.apache.hadoop.fs.RawLocalFileSystem.deprecatedGetFileStatus("
    "RawLocalFileSystem.java:915)\n"
)
BAD_FOOTER = error(
    FOOTER + "Caused by: shaded.parquet.org.apache.thrift.protocol.TProtocolException: don't "
    "know what type: 15\n"
)
WRONG_TAIL = error(
    "An error occurred while calling o4323.collectToPython.\n"
    ": org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while "
    f"reading file file://{FILE}.  SQLSTATE: KD001\n"
    "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.cannotReadFilesError("
    "QueryExecutionErrors.scala:864)\n"
    f"Caused by: java.lang.RuntimeException: file:{FILE} is not a Parquet file. Expected magic "
    "number at tail, but found [120, 120, 120, 120]\n"
)
GONE_BEFORE_THE_TASK = error(
    "An error occurred while calling o4323.collectToPython.\n"
    ": org.apache.spark.SparkException: [FAILED_READ_FILE.FILE_NOT_EXIST] Encountered error "
    f"while reading file file://{FILE}. File does not exist. It is possible the underlying "
    "files have been updated. SQLSTATE: 42K03\n"
)
DENIED = error(
    "An error occurred while calling o4323.collectToPython.\n"
    ": org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while "
    f"reading file file://{FILE}.  SQLSTATE: KD001\n"
    f"Caused by: java.io.FileNotFoundException: {FILE} (Permission denied)\n"
)
NOT_FOUND = error(f"[PATH_NOT_FOUND] Path does not exist: file:{FILE}. SQLSTATE: 42K03")
ORC_FILE = "/tmp/pipeline/output/generation-1/part-00000-24daf282-c000.zstd.orc"
# Spark's ORC reader infers the schema on the driver, and Hadoop's error comes through as is.
ORC_CHECKSUM = error(
    "An error occurred while calling o57.load.\n"
    f": org.apache.hadoop.fs.ChecksumException: Checksum error: file:{ORC_FILE} at 0 exp: "
    "578627977 got: 742178195\n"
    "\tat org.apache.hadoop.fs.FSInputChecker.verifySums(FSInputChecker.java:352)\n"
    "\tat org.apache.spark.sql.execution.datasources.orc.OrcUtils$.readSchema("
    "OrcUtils.scala:94)\n"
)


@pytest.mark.parametrize(
    ("spark_error", "expected"),
    [
        (
            CHECKSUM,
            FileReadFailure(
                path=f"file:{FILE}",
                error_class="FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER",
                cause="ChecksumException: Checksum error: at 512 exp: 964203704 got: -772400197",
                missing=False,
                denied=False,
            ),
        ),
        (
            DELETED,
            FileReadFailure(
                path=f"file:{FILE}",
                error_class="FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER",
                cause="FileNotFoundException: File does not exist",
                missing=True,
                denied=False,
            ),
        ),
        (
            BAD_FOOTER,
            FileReadFailure(
                path=f"file:{FILE}",
                error_class="FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER",
                cause="TProtocolException: don't know what type: 15",
                missing=False,
                denied=False,
            ),
        ),
        (
            WRONG_TAIL,
            FileReadFailure(
                path=f"file://{FILE}",
                error_class="FAILED_READ_FILE.NO_HINT",
                cause="RuntimeException: is not a Parquet file. Expected magic number at tail, "
                "but found [120, 120, 120, 120]",
                missing=False,
                denied=False,
            ),
        ),
        (
            GONE_BEFORE_THE_TASK,
            FileReadFailure(
                path=f"file://{FILE}",
                error_class="FAILED_READ_FILE.FILE_NOT_EXIST",
                cause="SparkException: Encountered error while reading file File does not exist. "
                "It is possible the underlying files have been updated.",
                missing=True,
                denied=False,
            ),
        ),
        (
            DENIED,
            FileReadFailure(
                path=f"file://{FILE}",
                error_class="FAILED_READ_FILE.NO_HINT",
                cause="FileNotFoundException: (Permission denied)",
                missing=True,
                denied=True,
            ),
        ),
        (
            NOT_FOUND,
            FileReadFailure(
                path=f"file:{FILE}",
                error_class="PATH_NOT_FOUND",
                cause="Path does not exist:",
                missing=True,
                denied=False,
            ),
        ),
        (
            ORC_CHECKSUM,
            FileReadFailure(
                path=f"file:{ORC_FILE}",
                error_class="ChecksumException",
                cause="Checksum error: at 0 exp: 578627977 got: 742178195",
                missing=False,
                denied=False,
            ),
        ),
    ],
    ids=[
        "checksum",
        "deleted",
        "footer",
        "wrong tail",
        "gone",
        "denied",
        "path not found",
        "orc checksum",
    ],
)
def test_a_failed_read_names_the_file_and_why(
    spark_error: Exception, expected: FileReadFailure
) -> None:
    assert failed_file(spark_error) == expected


def test_an_error_about_anything_else_names_no_file() -> None:
    lost = error(
        "An error occurred while calling o12.collectToPython.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Lost executor\n"
        "Caused by: java.io.IOException: Connection reset by peer\n"
    )

    assert failed_file(lost) is None
    assert cause(lost) == "IOException: Connection reset by peer"


def test_the_cause_of_a_py4j_error_is_its_deepest_java_exception() -> None:
    # Py4JJavaError's text: ": <exception>: ..." and "Caused by: <exception>: ..." lines.
    assert cause(BAD_FOOTER) == "TProtocolException: don't know what type: 15"


def test_a_failed_read_the_storage_caused_is_no_damage() -> None:
    # An object store throttling the read says nothing about the file: it must not be left
    # out and its windows reported lost on a healthy pipeline.
    throttled = error(
        "An error occurred while calling o4323.collectToPython.\n"
        ": org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while "
        f"reading file s3a://bucket{FILE}.  SQLSTATE: KD001\n"
        "Caused by: org.apache.hadoop.fs.s3a.AWSServiceThrottledException: open s3a://bucket: "
        "com.amazonaws.services.s3.model.AmazonS3Exception: Slow Down (Status Code: 503)\n"
    )

    assert failed_file(throttled) is None


def test_a_file_this_user_may_not_open_is_denied_not_missing() -> None:
    # Hadoop's FileNotFoundException "(Permission denied)": the advice is about access.
    failure = failed_file(DENIED)
    assert failure is not None

    damage = failure.damage(2, f"file://{FILE}")

    assert damage.damage is Damage.NO_ACCESS
    assert "is missing" not in damage.message()
