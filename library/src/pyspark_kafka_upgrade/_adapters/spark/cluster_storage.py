"""Refuse storage a cluster cannot share: a local path while the master runs executors
elsewhere.

On a cluster the executors write the checkpoint's state and the output, and the driver
reads them back; a path on one machine's disk means each writes to its own, and the job
loses or repeats windows. The ledger is read by whoever runs ``upgrade plan``. The local
masters (``local``, ``local[N]``, ``local-cluster[...]``) and a standalone master on this
machine's loopback share this machine's disk, so they pass.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from pyspark_kafka_upgrade._adapters.storage.filesystem import absolute_uri
from pyspark_kafka_upgrade._core.settings import Settings
from pyspark_kafka_upgrade._domain.errors import ConfigError
from pyspark_kafka_upgrade._domain.values.catalog import STORES

OVERRIDE = "pipeline.local_storage_on_cluster"
_LOCAL_MASTER = re.compile(r"local(\[[^\]]*\])?|local-cluster\[[^\]]*\]")
_LOOPBACK_NAMES = {"localhost", "ip6-localhost", "ip6-loopback"}


class ClusterStorageError(ConfigError):
    """The job's storage is on this machine's disk, and its master is a cluster."""


def shares_this_disk(master: str) -> bool:
    """Whether every process of ``master`` runs on this machine."""
    master = master.strip()
    if _LOCAL_MASTER.fullmatch(master):
        return True
    if not master.startswith("spark://"):
        return False  # yarn, k8s://, mesos://: executors run in containers or elsewhere
    hosts = [urlsplit(f"spark://{part}").hostname for part in master[8:].split(",")]
    return all(host is not None and _is_loopback(host) for host in hosts)


def _is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def local_storage(settings: Settings) -> list[str]:
    """The settings that put the job's storage on this machine's disk, with their values."""
    found = []
    if _is_local_uri(settings.pipeline.root):
        found.append(f"pipeline.root = {settings.pipeline.root!r} (checkpoints and output)")
    ledger = settings.ledger
    if STORES[ledger.store].on_this_disk(ledger.location):
        found.append(f"ledger.store = {ledger.store!r} at {ledger.location!r}")
    return found


def _is_local_uri(location: str) -> bool:
    return absolute_uri(location).startswith(("/", "file:"))


def check_storage_reaches(settings: Settings, master: str) -> None:
    """Raise ClusterStorageError when ``master`` is a cluster and the storage is local."""
    if settings.pipeline.local_storage_on_cluster or shares_this_disk(master):
        return
    local = local_storage(settings)
    if local:
        raise ClusterStorageError(
            f"the master {master!r} runs executors on other machines, but "
            f"{'; '.join(local)} is on this machine's disk, which they cannot share: windows "
            "would be lost or written twice. Put pipeline.root on shared storage (s3a://, "
            "abfs://, gs://, hdfs://) and use ledger.store = 'postgres', or a 'filesystem' "
            f"ledger on that storage. If every machine mounts the same path, set {OVERRIDE} "
            "= true"
        )
