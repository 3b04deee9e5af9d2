"""MLflow tracking beside TensorBoard: when config.mlflow_tracking_uri is set, the config's fields as the
run's params and every numeric entry of each result dict as metrics (step = timesteps_total), under the
experiment config.mlflow_experiment.

Written through mlflow's MlflowClient (no global active run, so two algorithms in one process log to two
runs). MLflow 3 refuses its file store (`file:` URIs) unless MLFLOW_ALLOW_FILE_STORE=true is set; a
database or server URI needs nothing. mlflow is an optional extra (`pip install 'relayrl[mlflow]'`);
without it a config that asks for MLflow is refused when the algorithm is built. A tracking server that
fails mid-run is reported once and then left alone: the run's own files (TensorBoard, progress.csv,
checkpoints) are what training needs.
"""

from __future__ import annotations

import json
import logging
import math
import time
from typing import Any

from relayrl.persistence.run_record import numeric_items

EXTRA = "mlflow"
MAX_PARAM_CHARS = 6000  # MLflow's limit on a param value
BATCH = 100  # MLflow takes at most 100 params (1000 metrics) per log_batch

log = logging.getLogger(__name__)


def check_server_reachable(tracking_uri: str, scheme: str, timeout_s: float = 5.0) -> None:
    """An http(s) tracking server that does not accept a connection is refused in one line now: MLflow's own
    client would retry it for minutes (7 retries, exponential backoff) before the first iteration."""
    if scheme not in ("http", "https"):
        return
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(tracking_uri)
    port = parts.port or (443 if scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=timeout_s):
            pass
    except OSError as exc:
        raise ValueError(
            f"mlflow_tracking_uri ({scheme}): no MLflow server answers at port {port} "
            f"({exc.strerror or exc}); allowed: the URI of a running tracking server, or leave it unset"
        ) from None


def _param_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text[:MAX_PARAM_CHARS]


class MLflowLogger:
    """Loop that uses it:  logger = MLflowLogger(uri, "relayrl", "ppo", config.to_dict()); logger.log(result)
    per iteration; logger.close() at the end. The run starts with the first log()."""

    def __init__(self, tracking_uri: str, experiment: str, algo: str, params: dict[str, Any]):
        try:
            from mlflow import MlflowClient
        except ImportError:
            raise ValueError(
                f"mlflow_tracking_uri is set but mlflow is not installed; allowed: install the extra "
                f"(pip install 'relayrl[{EXTRA}]') or leave mlflow_tracking_uri unset"
            ) from None
        scheme = tracking_uri.partition(":")[0] if ":" in tracking_uri else "a local path"
        check_server_reachable(tracking_uri, scheme)
        try:
            self.client = MlflowClient(tracking_uri=tracking_uri)
            found = self.client.get_experiment_by_name(experiment)
            self.experiment_id = found.experiment_id if found else self.client.create_experiment(experiment)
        except Exception as exc:  # mlflow raises its own and its stores' errors: refuse them all as one line
            text = str(exc).replace(tracking_uri, "<the URI>").strip()  # it may carry a password
            first = text.splitlines()[0] if text else type(exc).__name__
            raise ValueError(
                f"mlflow_tracking_uri ({scheme}) / mlflow_experiment = {experiment!r}: MLflow refused it "
                f"({first.split('. ')[0][:200]}); allowed: a tracking URI MLflow accepts (e.g. "
                f"'http://host:5000', 'sqlite:///mlflow.db', or 'file:./mlruns' with the environment "
                f"variable MLFLOW_ALLOW_FILE_STORE=true) and an experiment name"
            ) from None
        self.algo, self.params = algo, params
        self.run_id: str | None = None
        self._failed = False

    def _start(self) -> None:
        from mlflow.entities import Param

        run = self.client.create_run(self.experiment_id, tags={"relayrl.algo": self.algo})
        self.run_id = run.info.run_id
        params = [Param(k, _param_value(v)) for k, v in sorted(self.params.items())]
        for i in range(0, len(params), BATCH):
            self.client.log_batch(self.run_id, params=params[i : i + BATCH])

    def log(self, result: dict[str, Any]) -> None:
        if self._failed:
            return
        from mlflow.entities import Metric

        try:
            if self.run_id is None:
                self._start()
            now, step = int(time.time() * 1000), int(result["timesteps_total"])
            metrics = [
                Metric(k, float(v), now, step)
                for k, v in numeric_items(result).items()
                if math.isfinite(v)  # as TensorBoard: an iteration without episodes has no reward mean
            ]
            for i in range(0, len(metrics), 10 * BATCH):
                self.client.log_batch(self.run_id, metrics=metrics[i : i + 10 * BATCH])
        except Exception as exc:  # a tracking server that went away must not end the training run
            self._failed = True
            log.warning("MLflow logging stopped: %s", str(exc).strip().splitlines()[0] if str(exc) else exc)

    def close(self) -> None:
        if self.run_id is not None and not self._failed:
            try:
                self.client.set_terminated(self.run_id)
            except Exception as exc:
                log.warning("MLflow: could not end run %s: %s", self.run_id, exc)
        self.run_id = None


class NoLogger:
    """What mlflow_logger returns when MLflow is off: the same calls, nothing written."""

    def log(self, result: dict[str, Any]) -> None:
        pass

    def close(self) -> None:
        pass


def mlflow_logger(config: Any) -> MLflowLogger | NoLogger:
    """The config's MLflow logger (a NoLogger when mlflow_tracking_uri is unset). Secrets are not logged,
    nor the tracking URI itself (it may carry a user and password)."""
    if config.mlflow_tracking_uri is None:
        return NoLogger()
    from relayrl.core.knobs import SECRET_FIELDS

    hidden = (*SECRET_FIELDS, "mlflow_tracking_uri")
    params = {k: v for k, v in config.to_dict().items() if k not in hidden}
    return MLflowLogger(config.mlflow_tracking_uri, config.mlflow_experiment, config.algo_name, params)
