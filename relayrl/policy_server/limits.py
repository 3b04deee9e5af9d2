"""The policy server's limits on what one peer can hold: open episodes, connections and time.

    ServedAlgorithm(config, limits=ServerLimits(max_episodes=1000, read_timeout_s=5))
    relayrl serve ppo --env CartPole-v1 --max-episodes 1000 --read-timeout-s 5

Each field is a `relayrl serve` flag of the same name (`max_episodes` -> `--max-episodes`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

from relayrl.core import checks as C

DAY_S = 86_400.0  # the longest timeout: larger values would overflow the socket layer's C time types


@dataclass(frozen=True)
class ServerLimits:
    # open episodes; starting one more evicts the episode idle longest (a later request for it gets 410)
    max_episodes: int = 10_000
    # an episode without a request for this long expires (its client crashed); 410 afterwards
    episode_timeout_s: float = 600.0
    # concurrent connections (one thread each); over it a new connection gets 503 + Retry-After and is closed
    max_connections: int = 512
    # a request (headers and body together) must arrive within this long of the server starting to wait for
    # it, idle keep-alive time included: a stalled or slow-dripping connection is closed after it
    read_timeout_s: float = 10.0

    CHECKS: ClassVar[dict[str, C.Check]] = {
        "max_episodes": C.integer(1, 10_000_000),
        "episode_timeout_s": C.number(0, DAY_S, strict=True),
        "max_connections": C.integer(1, 65_536),
        "read_timeout_s": C.number(0, DAY_S, strict=True),
    }
    HELP: ClassVar[dict[str, str]] = {
        "max_episodes": "open episodes; one more evicts the one idle longest",
        "episode_timeout_s": "seconds without a request after which an episode expires",
        "max_connections": "concurrent connections; more get 503 and are closed",
        "read_timeout_s": "seconds a connection has to deliver a whole request (idle keep-alive included)",
    }

    def __post_init__(self) -> None:
        for f in fields(self):
            problem = self.problem(f.name, getattr(self, f.name))
            if problem is not None:
                raise ValueError(f"{flag(f.name)} {getattr(self, f.name)!r}: {problem}")

    @classmethod
    def problem(cls, name: str, value: Any) -> str | None:
        """None if `value` is allowed for field `name`, else what is allowed."""
        return cls.CHECKS[name](value)


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")
