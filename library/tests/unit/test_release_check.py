"""The release check's decisions before it builds anything: which version it releases, and
a tag that is not that version refused. The build and the fresh environment run in the
release job, on a tag."""

from __future__ import annotations

from pathlib import Path

import pytest
from tools import release_check

import pyspark_kafka_upgrade


def test_the_version_released_is_the_package_s() -> None:
    assert release_check.version() == pyspark_kafka_upgrade.__version__


def test_a_tag_of_another_version_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    with pytest.raises(SystemExit, match=r"the tag library-v0\.0\.1 is not library-v"):
        release_check.main(["--tag", "library-v0.0.1", "--dist", str(dist)])
    assert not dist.exists()
