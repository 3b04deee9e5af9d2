"""Every fleet and learner satisfies the protocols of core.contracts that the training loop relies on.

Cheap implementations are built for real and checked with isinstance (runtime_checkable protocols); the Ray
ones are checked by their class members (methods, properties, annotated attributes) and method signatures,
without starting Ray. A member missing here would otherwise show up as an AttributeError mid-training.
"""

from __future__ import annotations

import inspect
import typing

import numpy as np
import pytest

from relayrl.core import contracts

PROTOCOLS = {
    name: obj
    for name, obj in vars(contracts).items()
    if isinstance(obj, type) and issubclass(obj, typing.Protocol) and obj is not typing.Protocol
}


def protocol_members(proto: type) -> dict[str, object]:
    """name -> the protocol's declaration (a function, or None for an annotated attribute), bases included."""
    members: dict[str, object] = {}
    for klass in reversed(proto.__mro__):
        if klass is object or klass is typing.Protocol or klass.__module__ == "typing":
            continue
        members.update(dict.fromkeys(getattr(klass, "__annotations__", {})))
        members.update(
            {k: v for k, v in vars(klass).items() if inspect.isfunction(v) and not k.startswith("_")}
        )
    return members


def missing_members(cls: type, proto: type) -> list[str]:
    """Protocol members `cls` lacks, or whose method does not accept the protocol's parameters."""
    annotated = {name for klass in cls.__mro__ for name in getattr(klass, "__annotations__", {})}
    problems = []
    for name, declared in protocol_members(proto).items():
        if not hasattr(cls, name) and name not in annotated:
            problems.append(name)
        elif inspect.isfunction(declared):
            implemented = inspect.getattr_static(cls, name)
            if not inspect.isfunction(implemented):
                problems.append(f"{name} (not a method)")
                continue
            accepted = inspect.signature(implemented).parameters
            wanted = [p for p in inspect.signature(declared).parameters if p != "self"]
            if any(p not in accepted for p in wanted):
                problems.append(f"{name}{inspect.signature(implemented)} (protocol: {wanted})")
    return problems


def ray_classes():
    from relayrl.runtime.gradient_fleets import A3CWorkers, GradientWorkers
    from relayrl.runtime.ray_async import LearnerQueue
    from relayrl.runtime.ray_workers import RayWorkers
    from relayrl.runtime.remote_learner import RemoteLearner

    return RayWorkers, GradientWorkers, A3CWorkers, LearnerQueue, RemoteLearner


def expected():
    """(implementation, the protocols it must satisfy)."""
    from relayrl.algorithms.qlearning import QTable
    from relayrl.policy_server.episodes import ExternalEpisodes
    from relayrl.runtime.local import LocalWorkers, SerialQueue

    RayWorkers, GradientWorkers, A3CWorkers, LearnerQueue, RemoteLearner = ray_classes()
    c = contracts
    return [
        (LocalWorkers, [c.SyncFleet, c.WorkerStates]),
        (SerialQueue, [c.QueueFleet, c.WorkerStates]),
        (ExternalEpisodes, [c.SyncFleet]),
        (RayWorkers, [c.SyncFleet, c.RestartingFleet, c.PlacedFleet, c.WorkerStates, c.WeightRefFleet]),
        (GradientWorkers, [c.GradientFleet, c.RestartingFleet, c.PlacedFleet]),
        (A3CWorkers, [c.AsyncGradientFleet, c.RestartingFleet, c.PlacedFleet]),
        (LearnerQueue, [c.QueueFleet, c.RestartingFleet, c.PlacedFleet]),
        (RemoteLearner, [c.GradientLearner, c.RemoteWeights, c.Stoppable]),
        (QTable, [c.LearnerLike]),
    ]


@pytest.mark.parametrize("cls, protocols", expected(), ids=lambda x: getattr(x, "__name__", ""))
def test_every_implementation_has_its_protocols_members(cls, protocols):
    for proto in protocols:
        assert missing_members(cls, proto) == [], f"{cls.__name__} vs {proto.__name__}"


def test_every_protocol_is_implemented_somewhere():
    used = {proto for _, protocols in expected() for proto in protocols}
    bases = {base for proto in used for base in proto.__mro__}
    assert set(PROTOCOLS.values()) - used - bases == set()


def test_the_checker_notices_a_missing_or_misnamed_member():
    class Typo:  # what a getattr default used to hide: restart_total instead of restarts_total
        restart_total = 0
        lost_fragments = 0
        last_latencies_s: list[float]

        def wait_ready(self): ...
        def sync_weights(self, weights, version): ...
        def healthy(self): ...
        def object_store_bytes(self): ...
        def stop(self): ...
        def sample(self, explore_now=None): ...

    assert missing_members(Typo, contracts.SyncFleet) == [
        "restarts_total",
        "sample(self, explore_now=None) (protocol: ['explore'])",
    ]
    assert not isinstance(Typo(), contracts.Fleet)


def cartpole_settings():
    from relayrl.core.config import DEFAULT_MODEL
    from relayrl.envs.make import env_spaces
    from relayrl.models import networks
    from relayrl.sampling.settings import SamplerSettings

    spec = networks.spec_from_spaces(*env_spaces("CartPole-v1", {}), DEFAULT_MODEL)
    return SamplerSettings(env="CartPole-v1", env_config={}, num_envs=2, fragment_length=4, spec=spec, seed=0)


def test_real_local_fleets_and_external_episodes_satisfy_their_protocols():
    import gymnasium as gym

    from relayrl.models import networks
    from relayrl.policy_server.episodes import ExternalEpisodes
    from relayrl.runtime.local import LocalWorkers, SerialQueue
    from relayrl.sampling.settings import Exploration

    settings = cartpole_settings()
    local, queue = LocalWorkers(settings), SerialQueue(settings)
    episodes = ExternalEpisodes(settings.spec, gym.spaces.Discrete(2), 8, 0.99, 0.95, seed=0)
    try:
        for fleet in (local, queue, episodes):
            assert isinstance(fleet, contracts.Fleet)
            assert (fleet.restarts_total, fleet.lost_fragments, fleet.object_store_bytes()) == (0, 0, 0)
        assert isinstance(local, contracts.SyncFleet) and isinstance(local, contracts.WorkerStates)
        assert isinstance(queue, contracts.QueueFleet) and not isinstance(queue, contracts.RestartingFleet)
        assert isinstance(episodes, contracts.SyncFleet) and not isinstance(episodes, contracts.WorkerStates)
        local.sync_weights(networks.init_weights(settings.spec, np.random.default_rng(0)), 0)
        fragments = local.sample()
        assert local.last_latencies_s == [fragments[0].sample_time_s]
        with pytest.raises(ValueError, match="explore"):
            episodes.sample(explore=Exploration(epsilon=0.1))
    finally:
        local.stop(), queue.stop(), episodes.stop()


def test_a_real_tf_learner_and_q_table_satisfy_the_learner_protocols():
    from relayrl.algorithms.ppo import PPO, PPOConfig
    from relayrl.algorithms.qlearning import QTable

    learner = PPO.build_learner(cartpole_settings().spec, PPOConfig())
    assert isinstance(learner, contracts.GradientLearner)
    assert not isinstance(learner, contracts.RemoteWeights)
    table = QTable(4, 2, lr=0.1, gamma=0.9)
    assert isinstance(table, contracts.LearnerLike) and not isinstance(table, contracts.GradientLearner)
