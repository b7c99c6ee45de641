"""Where a test broker listens: the listeners of its ``server.properties``, given free ports.

The ``apache`` backend's broker has :class:`PlaintextListeners`; the secured broker has its
own layout (``secured``) on the same JVM.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class Listeners:
    """Where a broker listens, and how a client of the test's own reaches it."""

    bootstrap_servers: str
    # server.properties lines: listeners, their protocols, and what they need (TLS, SASL).
    properties: Mapping[str, str]
    # librdkafka settings (besides bootstrap.servers) of a client allowed everything; the
    # readiness check and the test helpers connect with them.
    admin_client: Mapping[str, str] = field(default_factory=dict)


class ListenerLayout(Protocol):
    """The listeners of a broker, given free ports; the controller's port is the last."""

    ports: int

    def listeners(self, ports: Sequence[int]) -> Listeners: ...


class PlaintextListeners:
    """One PLAINTEXT listener for clients and one for the KRaft controller."""

    ports = 2

    def listeners(self, ports: Sequence[int]) -> Listeners:
        broker_port, controller_port = ports
        return Listeners(
            f"127.0.0.1:{broker_port}",
            {
                "listeners": (
                    f"PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}"
                ),
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker_port}",
                "inter.broker.listener.name": "PLAINTEXT",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            },
        )
