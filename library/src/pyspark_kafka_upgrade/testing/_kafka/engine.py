"""The container engine behind Docker's API (Docker, or podman's service) that runs the
``testcontainers`` backend's Kafka: whether one answers, and which one it is.

The ``docker`` package is imported when an engine is asked, by name, so that the untyped
package needs no type stubs and loading the plugin needs no container library.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

# How long a quick question to the engine (a ping, an image's labels) may take.
ENGINE_TIMEOUT_S = 3


def docker_client(timeout: int) -> Any:
    """A client of the engine ``DOCKER_HOST`` (or the default socket) names."""
    docker: Any = importlib.import_module("docker")
    return docker.from_env(timeout=timeout)


def docker_errors() -> Any:
    """The ``docker.errors`` module, for the engine's answers worth telling apart."""
    return importlib.import_module("docker.errors")


def docker_is_available(timeout: int = ENGINE_TIMEOUT_S) -> bool:
    """Whether testcontainers is installed and a Docker daemon answers a ping quickly."""
    if importlib.util.find_spec("testcontainers") is None:
        return False
    try:
        client = docker_client(timeout)
    except Exception:
        # No docker package, no socket, bad DOCKER_HOST, unreadable config: all mean "no
        # usable Docker".
        return False
    try:
        return bool(client.ping())
    except Exception:
        return False
    finally:
        client.close()


def engine_name(client: Any) -> str:
    """``Podman`` or ``Docker``, as the engine's version report names itself."""
    components = client.version().get("Components") or []
    names = " ".join(str(component.get("Name", "")) for component in components)
    return "Podman" if "podman" in names.lower() else "Docker"
