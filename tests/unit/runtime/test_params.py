"""ParameterServer and WeightClient in-process (the Ray wiring is covered in tests/integration)."""

import time

import numpy as np
import pytest

from relayrl.runtime.params import ParameterServer, WeightClient


def versions_source():
    server = ParameterServer()
    fetches = []

    def fetch(known):
        fetches.append(known)
        return server.latest(known)

    return server, fetch, fetches


def test_pull_every_k_fragments_only_when_the_version_moved():
    server, fetch, fetches = versions_source()
    server.set_weights([np.ones(2, np.float32)], 0)
    got = []
    client = WeightClient(fetch, lambda w, v: got.append(v), every_k=3)
    for i in range(7):
        if i == 4:
            server.set_weights([np.full(2, 2.0, np.float32)], 1)
        client.before_fragment()
    assert fetches == [-1, 0, 0]  # fragments 0, 3, 6 ask (with the version they hold); 3 gets nothing new
    assert got == [0, 1] and client.version == 1 and client.pulls == 2


def test_ema_soft_update_of_the_worker_copy():
    server, fetch, _ = versions_source()
    client = WeightClient(fetch, lambda w, v: None, ema_tau=0.25)
    server.set_weights([np.zeros(2, np.float32)], 0)
    client.before_fragment()
    np.testing.assert_allclose(client.weights[0], [0.0, 0.0])  # the first pull is taken as is
    server.set_weights([np.full(2, 4.0, np.float32)], 1)
    client.before_fragment()
    np.testing.assert_allclose(client.weights[0], [1.0, 1.0])  # 0.25 * 4 + 0.75 * 0
    assert client.version == 1


def test_background_pull_never_blocks_and_installs_between_fragments():
    server, fetch, _ = versions_source()
    installed = []
    server.set_weights([np.zeros(1, np.float32)], 5)
    client = WeightClient(fetch, lambda w, v: installed.append(v), background=True, poll_s=0.001)
    try:
        deadline = time.time() + 2.0
        while client.version != 5 and time.time() < deadline:
            client.before_fragment()
            time.sleep(0.002)
        assert installed == [5]
    finally:
        client.stop()


def test_parameter_server_applies_gradients_and_records_staleness():
    pytest.importorskip("tensorflow")
    import gymnasium as gym

    from relayrl.algorithms.a2c import A2C_METRICS, a2c_loss
    from relayrl.core.knobs import DEFAULT_MODEL
    from relayrl.learning.learner import Learner
    from relayrl.learning.spec import LearnerSpec
    from relayrl.models import networks
    from relayrl.sampling.settings import batch_spec

    spec = networks.spec_from_spaces(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(2), DEFAULT_MODEL)
    hparams = {"entropy_coeff": 0.0, "vf_loss_coeff": 0.5}
    make = lambda: Learner(spec, LearnerSpec(a2c_loss, A2C_METRICS, 0.1, batch_spec(spec), hparams=hparams))
    server = ParameterServer(make)
    w0 = networks.init_weights(spec, np.random.default_rng(0))
    server.set_weights(w0, 0)
    grads = [np.ones_like(w) for w in w0]
    _, v1 = server.apply_gradients(grads, 0)  # fresh: staleness 0
    weights, v2 = server.apply_gradients(grads, 0)  # computed before the first update landed: staleness 1
    assert (v1, v2) == (1, 2)
    # Adam's first steps move every weight by ~lr against the gradient's sign
    np.testing.assert_allclose(weights[0], w0[0] - 0.2, atol=1e-3)
    stats = server.pop_stats()
    assert stats["updates"] == 2 and stats["staleness_mean"] == 0.5 and stats["staleness_max"] == 1
    assert server.pop_stats()["updates"] == 0
