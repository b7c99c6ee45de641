"""The network guard of .ci/podman: it compares like with like, and still sees a real change.

On a fresh machine the first record is taken before podman's packages bring iptables-save,
so it cannot list the firewall; the record after can. These tests run the guard's own
functions (sourced from .ci/podman) on such machine states: tools hidden from PATH, a fake
iptables-save, and a real change of a link in a private network namespace.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TEMPLATE_DIR

PODMAN = TEMPLATE_DIR / ".ci" / "podman"
# What ci_podman_host_network and its comparison need, and nothing that lists a firewall.
BASE_TOOLS = ("ip", "awk", "sort", "tr", "sed", "cat", "grep", "wc", "head", "env", "bash")


def tool_dir(tmp_path: Path, name: str, *, iptables_rules: int | None = None) -> Path:
    """A PATH directory holding the base tools, and iptables-save only when given its rules."""
    directory = tmp_path / name
    directory.mkdir()
    for tool in BASE_TOOLS:
        found = shutil.which(tool)
        assert found is not None, f"{tool} is not on PATH"
        (directory / tool).symlink_to(found)
    # The interpreter itself, not a launcher script (pyenv's shims) that needs more of PATH.
    (directory / "python3").symlink_to(Path(sys.executable).resolve())
    if iptables_rules is not None:
        fake = directory / "iptables-save"
        rules = "".join("-A INPUT -j ACCEPT\\n" for _ in range(iptables_rules))
        fake.write_text(f"#!/bin/sh\nprintf '*filter\\n{rules}COMMIT\\n'\n")
        fake.chmod(0o755)
    return directory


def guard(script: str, *, prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs ``script`` in bash with .ci/podman sourced, under ``set -euo pipefail`` as
    .ci/run does."""
    return subprocess.run(
        [*(prefix or []), "bash", "-c", f"set -euo pipefail; . {PODMAN}; {script}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def records_and_stop(before: Path, installed: Path, after: Path, change: str = "") -> str:
    """The three records of a run, each with its own tools, then the guard's end check."""
    return (
        f"CI_PODMAN_NETWORK_BEFORE=$(PATH={before} ci_podman_host_network); "
        f"CI_PODMAN_NETWORK_INSTALLED=$(PATH={installed} ci_podman_host_network); "
        f"{change}"
        f"PATH={after} ci_podman_stop"
    )


def test_a_fresh_machine_without_iptables_save_passes_when_nothing_changed(
    tmp_path: Path,
) -> None:
    # Before podman's packages: no iptables-save, no nft. After them: a firewall with 0 rules.
    bare = tool_dir(tmp_path, "bare")
    installed = tool_dir(tmp_path, "installed", iptables_rules=0)

    result = guard(records_and_stop(bare, installed, installed))
    assert result.returncode == 0, result.stderr
    assert ".ci/podman: host network unchanged" in result.stdout

    first = guard(f"PATH={bare} ci_podman_host_network")
    assert first.returncode == 0, first.stderr
    assert "iptables rules: not listable (no iptables-save)" in first.stdout


def test_a_rule_added_after_the_packages_came_is_still_caught(tmp_path: Path) -> None:
    bare = tool_dir(tmp_path, "bare")
    installed = tool_dir(tmp_path, "installed", iptables_rules=0)
    bridged = tool_dir(tmp_path, "bridged", iptables_rules=2)

    result = guard(records_and_stop(bare, installed, bridged))

    assert result.returncode == 1, result.stdout
    assert ".ci/podman: the host's network changed:" in result.stderr
    assert "- iptables rules: 0" in result.stderr and "+ iptables rules: 2" in result.stderr


def test_a_machine_that_had_iptables_before_compares_it_from_the_start(tmp_path: Path) -> None:
    # The first record lists 1 rule; the guard must not forgive a change because the second
    # record (taken after the install) already saw it.
    before = tool_dir(tmp_path, "before", iptables_rules=1)
    changed = tool_dir(tmp_path, "changed", iptables_rules=3)

    result = guard(records_and_stop(before, changed, changed))

    assert result.returncode == 1, result.stdout
    assert "- iptables rules: 1" in result.stderr and "+ iptables rules: 3" in result.stderr


@pytest.mark.skipif(
    os.geteuid() != 0 and not os.environ.get("CI"),
    reason="a private network namespace (unshare --net) needs root; CI runs as root",
)
def test_a_real_change_to_a_link_fails_the_guard(tmp_path: Path) -> None:
    """A real change, made safely: in a network namespace of its own (unshare --net), whose
    only link is lo, the guard records, lo is brought up (an address and state change), and
    the end check must fail naming it. The host's network is never touched."""
    tools = tool_dir(tmp_path, "tools", iptables_rules=0)
    script = records_and_stop(tools, tools, tools, change="ip link set lo up; ")

    result = guard(script, prefix=["unshare", "--net"])

    assert result.returncode == 1, (result.stdout, result.stderr)
    assert ".ci/podman: the host's network changed:" in result.stderr
    assert "+ address: lo" in result.stderr and "UNKNOWN" in result.stderr
    # Nothing changed, nothing reported: the same namespace check without the change passes.
    quiet = guard(records_and_stop(tools, tools, tools), prefix=["unshare", "--net"])
    assert quiet.returncode == 0, quiet.stderr
