"""The sentinel search names the file and line of every leak, and finds none where none is."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from pyspark_kafka_upgrade.testing._secret_search import assert_no_secret, find_secret

SENTINEL = "sentinel-4f2a9c1e"


def test_a_password_logged_once_is_found_with_its_file_and_line(tmp_path: Path) -> None:
    # The leak the secured suite must catch: a log line with the password in it.
    log_file = tmp_path / "logs" / "pytest.log"
    log_file.parent.mkdir()
    handler = logging.FileHandler(log_file)
    logger = logging.getLogger("test_secret_search.leaky")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("connecting as pipeline")
        logger.warning("login failed for pipeline with password %s", SENTINEL)
        logger.warning("giving up")
    finally:
        logger.removeHandler(handler)
        handler.close()
    (tmp_path / "clean.parquet").write_bytes(b"PAR1\x00" + b"x" * 100)

    with pytest.raises(AssertionError) as caught:
        assert_no_secret(SENTINEL, files=[tmp_path])
    report = str(caught.value)
    assert f"{log_file}:2: " in report
    assert "password <SECRET>" in report
    assert SENTINEL not in report, "the report must not repeat the secret"


def test_binary_files_and_captured_texts_are_searched(tmp_path: Path) -> None:
    (tmp_path / "ledger.db").write_bytes(b"SQLite format 3\x00\n\n" + SENTINEL.encode() + b"\x01")
    leaks = find_secret(
        SENTINEL, files=[tmp_path], texts={"stderr of run": f"a\nb\nc {SENTINEL}\n"}
    )
    assert [(Path(leak.where).name, leak.line) for leak in leaks] == [
        ("ledger.db", 3),
        ("stderr of run", 3),
    ]


def test_nothing_found_reports_how_much_was_searched(tmp_path: Path) -> None:
    for name in ("a.json", "b.crc"):
        (tmp_path / name).write_text("no secret here")
    assert assert_no_secret(SENTINEL, files=[tmp_path], texts={"stdout": "fine"}) == 3


def test_a_short_sentinel_is_refused() -> None:
    with pytest.raises(ValueError, match="8 characters"):
        find_secret("pw", files=[])
