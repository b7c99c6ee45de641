"""Process figures through psutil: the peak memory of a process and its children."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

import psutil

MIB = 1024 * 1024


@dataclass
class Peak:
    """The largest resident set a process tree had while sampled, in bytes."""

    bytes: int = 0
    samples: int = 0

    @property
    def mib(self) -> float:
        return self.bytes / MIB


def tree_rss(root: psutil.Process) -> int:
    """The resident set of ``root`` and every descendant, summed; gone processes count 0."""
    total = 0
    try:
        members = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    for member in members:
        try:
            total += member.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total


@contextmanager
def peak_of(measure: Callable[[], int], every_s: float = 0.1) -> Iterator[Peak]:
    """Sample ``measure`` (bytes) on a thread until the block ends, and once more at its end;
    the peak is kept."""
    peak = Peak()
    done = threading.Event()

    def sample() -> None:
        peak.bytes = max(peak.bytes, measure())
        peak.samples += 1

    def sampling() -> None:
        sample()
        while not done.wait(every_s):
            sample()

    thread = threading.Thread(target=sampling, name="bench-peak-memory", daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        done.set()
        thread.join(timeout=10)
        sample()


def peak_memory(pid: int, every_s: float = 0.1) -> AbstractContextManager[Peak]:
    """The peak resident set of the tree of ``pid`` while the block runs."""
    root = psutil.Process(pid)
    return peak_of(lambda: tree_rss(root), every_s)
