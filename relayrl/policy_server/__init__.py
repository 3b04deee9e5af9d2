"""Policy server for external simulators: programs that are not gymnasium envs drive episodes over
HTTP with JSON (the shape of RLlib's policy server / client), and the server trains on them.

    relayrl serve ppo --env CartPole-v1 --port 9900          # the env id only supplies the spaces

    from relayrl.policy_server import PolicyClient
    client = PolicyClient("http://127.0.0.1:9900")
    eid = client.start_episode()
    action = client.get_action(eid, obs); client.log_returns(eid, reward); ...; client.end_episode(eid, obs)

Modules: `wire` (JSON <-> numpy, request validation), `batcher` (one forward pass for many requests),
`episodes` (episode bookkeeping, fragments for the normal training path), `http_server` (the
PolicyServer and its routes), `connections` (the connection cap), `request_handler` (each request read
within its deadline, answered in JSON), `limits` (what one peer may hold), `serve` (the algorithm behind
the server), `client`.
"""

from relayrl.policy_server.client import (
    EpisodeLostError,
    PolicyClient,
    PolicyServerError,
    PolicyServerUnavailable,
)
from relayrl.policy_server.limits import ServerLimits

__all__ = ["EpisodeLostError", "PolicyClient", "PolicyServerError", "PolicyServerUnavailable", "ServerLimits"]
