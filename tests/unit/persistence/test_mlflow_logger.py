"""MLflow beside TensorBoard: the config as params, every numeric result as metrics (step =
timesteps_total) in a local file store, read back with mlflow's own client; refusals in one line."""

from __future__ import annotations

import sys

import pytest

from relayrl.algorithms.ppo import PPOConfig

mlflow = pytest.importorskip("mlflow")


def ppo(uri: str | None):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_rollout_workers=0)
        .training(train_batch_size=64, sgd_minibatch_size=64, num_sgd_iter=1)
        .evaluation(evaluation_interval=2, evaluation_episodes=2)
        .reporting(mlflow_tracking_uri=uri, mlflow_experiment="relayrl-test")
        .debugging(seed=0)
    )


def test_params_and_metrics_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # mlflow 3 keeps its file store behind this
    uri = (tmp_path / "mlruns").as_uri()
    with ppo(uri).build() as algo:
        results = [algo.train() for _ in range(2)]
    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("relayrl-test")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.params["train_batch_size"] == "64" and run.data.params["env"] == "CartPole-v1"
    assert "mlflow_tracking_uri" not in run.data.params and "redis_password" not in run.data.params
    history = client.get_metric_history(run.info.run_id, "env_steps_this_iter")
    assert [(m.step, m.value) for m in history] == [
        (r["timesteps_total"], r["env_steps_this_iter"]) for r in results
    ]
    (evaluation,) = client.get_metric_history(run.info.run_id, "evaluation/episode_reward_mean")
    assert evaluation.step == results[1]["timesteps_total"]
    assert evaluation.value == pytest.approx(results[1]["evaluation/episode_reward_mean"])


def test_missing_mlflow_is_refused_at_build_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # what `import mlflow` meets where it is not installed
    with pytest.raises(ValueError, match=r"pip install 'relayrl\[mlflow\]'") as info:
        ppo((tmp_path / "mlruns").as_uri()).build()
    assert "\n" not in str(info.value)


def test_a_file_store_without_the_opt_in_is_refused_naming_it(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    with pytest.raises(ValueError, match="MLFLOW_ALLOW_FILE_STORE=true") as info:
        ppo((tmp_path / "mlruns").as_uri()).build()
    assert "\n" not in str(info.value)


def test_a_uri_mlflow_refuses_is_one_line_without_the_uri(tmp_path):
    with pytest.raises(ValueError, match=r"mlflow_tracking_uri \(nosuch\).*allowed: a tracking URI") as info:
        ppo("nosuch://user:secret@host/x").build()
    assert "\n" not in str(info.value) and "secret" not in str(info.value)


def test_a_tracking_server_that_does_not_answer_is_refused_at_once(tmp_path):
    """MLflow's client would retry a dead server for minutes before the first iteration."""
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    start = time.monotonic()
    with pytest.raises(ValueError, match=rf"no MLflow server answers at port {port}") as info:
        ppo(f"http://user:secret@127.0.0.1:{port}").build()
    assert time.monotonic() - start < 30
    assert "\n" not in str(info.value) and "secret" not in str(info.value)
