"""Ray Tune integration: any relayrl algorithm as a class-based Tune Trainable (Liaw et al. 2018,
arXiv:1807.05118), checkpointed with relayrl's own checkpoints (JSON + NPZ + tf.train.Checkpoint, no
pickle), so schedulers can stop trials early (ASHA, Li et al. 2020, arXiv:1810.05934) and pause, restore and
clone them (PBT, Jaderberg et al. 2017, arXiv:1711.09846).

    from ray import tune
    from relayrl.algorithms.ppo import PPOConfig
    from relayrl.integrations.tune import trainable

    tuner = tune.Tuner(trainable(PPOConfig().environment("CartPole-v1")),
                       param_space={"lr": tune.loguniform(1e-4, 1e-2)},
                       tune_config=tune.TuneConfig(metric="episode_reward_mean", mode="max", num_samples=4),
                       run_config=tune.RunConfig(stop={"training_iteration": 5}))

A trial's config holds flat relayrl field names (`lr`, `gamma`, `model.fcnet_hiddens`, ...) laid over the
base config and checked by relayrl's Config, so a bad key fails the trial with relayrl's message. Trials
sample in their own process (num_rollout_workers=0 unless the base config says otherwise) and ask Tune
for one CPU each. Ray Tune is imported inside the functions: importing this module costs nothing.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from relayrl.core.config import Config
from relayrl.integrations import search_space
from relayrl.integrations.search_space import SCHEDULERS, SearchSpec, check_search


def base_config(base: str | type[Config] | Config) -> Config:
    """An algorithm name ('ppo'), a Config class or a Config instance -> a Config instance (a copy)."""
    if isinstance(base, str):
        from relayrl.algorithms import config_class

        return config_class(base)()
    if isinstance(base, type) and issubclass(base, Config):
        return base()
    if isinstance(base, Config):
        return base.copy()
    raise TypeError(
        f"trainable() takes an algorithm name, a Config class or a Config, got {type(base).__name__}"
    )


def build_config(algo_name: str, base: dict[str, Any], trial_config: dict[str, Any]) -> Config:
    """The base config (as a dict) with the trial's fields laid over it, checked by relayrl's Config.
    TensorBoard files stay off: Tune logs every result of every trial itself."""
    from relayrl.algorithms import config_class

    config = config_class(algo_name).from_dict(base)
    fields = search_space.split_model_keys({k: _native(v) for k, v in trial_config.items()})
    model = fields.pop("model", None)
    if model is not None:
        config.update_from_dict({"model": {**config.model, **model}})
    config.update_from_dict(fields)
    config.log_dir = None
    config.validate()
    return config


def trainable(base: str | type[Config] | Config) -> type:
    """A tune.Trainable class that trains `base`'s algorithm with each trial's fields laid over `base`."""
    from relayrl.extras import require

    tune = require("ray.tune", "relayrl.integrations.tune.trainable")

    base = base_config(base)
    base_dict, algo_name = base.to_dict(), base.algo_name

    class RelayRLTrainable(tune.Trainable):
        def setup(self, config: dict[str, Any]) -> None:
            self.algo = build_config(algo_name, base_dict, config).build()

        def step(self) -> dict[str, Any]:
            return self.algo.train()

        def save_checkpoint(self, checkpoint_dir: str) -> None:
            self.algo.save(checkpoint_dir)  # a relayrl checkpoint: Algorithm.from_checkpoint(dir) loads it

        def load_checkpoint(self, checkpoint_dir: str) -> None:
            if (
                self.algo.iteration
            ):  # restore into a fresh algorithm: the checkpoint's counters replace, not add
                self.algo.stop()
                self.setup(self.config)
            # PBT clones a checkpoint, then changes the config: the learning rates and loss hyper-parameters
            # stored in the checkpoint give way to the ones this trial's config was built with.
            keep = [(v, v.numpy()) for v in _hyperparameter_variables(self.algo)]
            self.algo.restore(checkpoint_dir)
            for variable, value in keep:
                variable.assign(value)

        def reset_config(self, new_config: dict[str, Any]) -> bool:
            """Reuse this actor for another trial (reuse_actors=True): a new algorithm, no new process."""
            self.algo.stop()
            self.setup(new_config)
            return True

        def cleanup(self) -> None:
            self.algo.stop()

        @classmethod
        def default_resource_request(cls, config: dict[str, Any]):
            workers = _int_or(config.get("num_rollout_workers"), base_dict["num_rollout_workers"])
            cpus = _float_or(config.get("num_cpus_per_worker"), base_dict["num_cpus_per_worker"])
            return tune.PlacementGroupFactory([{"CPU": 1}] + [{"CPU": cpus}] * workers)

    RelayRLTrainable.__name__ = RelayRLTrainable.__qualname__ = f"relayrl_{algo_name}"
    return RelayRLTrainable


def _hyperparameter_variables(algo) -> list:
    """The learner's learning-rate and loss hyper-parameter variables (none for a learner in a Ray actor
    or a tabular learner: those keep the checkpoint's values)."""
    from relayrl.learning.learner import Learner

    return algo.learner.tunable_variables() if isinstance(algo.learner, Learner) else []


def _native(value: Any) -> Any:
    """numpy scalars (what Tune samples) -> Python numbers, so configs stay JSON-able."""
    return value.item() if hasattr(value, "item") and getattr(value, "shape", None) == () else value


def _int_or(value: Any, default: int) -> int:
    return int(value) if isinstance(value, (int, float)) else int(default)


def _float_or(value: Any, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) else float(default)


# ---------------------------------------------------------------------- a whole search (`relayrl tune`)
@dataclass
class SearchOutcome:
    """What a search found: one row per trial and the best trial's row (with its checkpoint directory,
    which `Algorithm.from_checkpoint` loads)."""

    metric: str
    mode: str
    trials: list[dict[str, Any]]
    best: dict[str, Any]
    experiment_path: str
    searched: list[str] = field(default_factory=list)


def make_scheduler(
    name: str, specs: list[SearchSpec], max_t: int, perturbation_interval: int, seed: int | None
):
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, PopulationBasedTraining

    if name == "fifo":
        return FIFOScheduler()
    if name == "asha":  # halve the field at iterations 1, 2, 4, ... up to max_t
        return ASHAScheduler(time_attr="training_iteration", max_t=max_t, grace_period=1, reduction_factor=2)
    if name == "pbt":
        import random

        if seed is not None:
            random.seed(seed)  # PBT explores with the random module
        # synch: every trial reaches the perturbation point before the bottom quarter clones the top quarter,
        # so which trials exploit does not depend on which finished its iteration first
        return PopulationBasedTraining(
            time_attr="training_iteration",
            perturbation_interval=perturbation_interval,
            hyperparam_mutations={s.key: s.mutation() for s in specs},
            synch=True,
        )
    raise ValueError(f"unknown scheduler {name!r}; allowed: {', '.join(SCHEDULERS)}")


def run_search(
    base: Config,
    search: list[SearchSpec | str],
    num_samples: int = 4,
    scheduler: str = "fifo",
    stop_iters: int = 10,
    stop_reward: float | None = None,
    metric: str = "episode_reward_mean",
    mode: str = "max",
    storage: str | None = None,
    name: str | None = None,
    perturbation_interval: int = 2,
    verbose: int = 0,
) -> SearchOutcome:
    """Run a Tune search over `search` (expressions like 'lr=loguniform(1e-4,1e-2)') on the embedded Ray
    (or base.address), every trial checkpointed at its end; returns the trials and the best one by
    `metric` at each trial's last result."""
    from relayrl.extras import require

    tune = require("ray.tune", "a Ray Tune search")

    from relayrl.runtime.cluster import init_ray

    specs = [s if isinstance(s, SearchSpec) else search_space.parse(s) for s in search]
    check_search(base, specs, num_samples, scheduler, stop_iters, mode, perturbation_interval, metric)
    init_ray(base.address)  # relayrl's embedded Ray: loopback only, workers' thread caps
    stop: dict[str, float] = {"training_iteration": stop_iters}
    if stop_reward is not None:
        stop["episode_reward_mean"] = stop_reward
    storage = os.path.abspath(os.path.expanduser(storage or os.path.join("~", "relayrl_results", "tune")))
    env_name = str(base.env).replace("/", "-")
    name = name or f"{base.algo_name}_{env_name}_{time.strftime('%Y%m%d-%H%M%S')}_{os.getpid()}"
    tune_config = tune.TuneConfig(
        metric=metric,
        mode=mode,
        num_samples=num_samples,
        reuse_actors=True,  # a new trial skips TF's import
        scheduler=make_scheduler(scheduler, specs, stop_iters, perturbation_interval, base.seed),
    )
    if base.seed is not None:  # the same trials' configs on every run with this seed
        from ray.tune.search import BasicVariantGenerator

        tune_config.search_alg = BasicVariantGenerator(random_state=base.seed)
    run_config = tune.RunConfig(
        name=name,
        storage_path=storage,
        stop=stop,
        verbose=verbose,
        checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True),
    )
    tuner = tune.Tuner(
        trainable(base),
        param_space={s.key: s.to_tune() for s in specs},
        tune_config=tune_config,
        run_config=run_config,
    )
    try:
        grid = tuner.fit()
    except tune.TuneError as exc:  # Tune's controller gave up (e.g. a result without the metric)
        lines = [line for line in str(exc).splitlines() if line.strip()]
        raise RuntimeError(f"Ray Tune stopped the search: {lines[-1][:500] if lines else exc}") from None
    keys = [s.key for s in specs]
    trials = [_trial_row(result, keys, metric) for result in grid]
    finished = [t for t in trials if t["error"] is None and _finite(t[metric])]
    if not finished:
        errors = "; ".join(t["error"] for t in trials if t["error"]) or f"no trial reported a finite {metric}"
        raise RuntimeError(f"no trial of the search finished: {errors}")
    best_result = grid.get_best_result(metric=metric, mode=mode, scope="last")
    best = _trial_row(best_result, keys, metric)
    return SearchOutcome(metric, mode, trials, best, grid.experiment_path, keys)


def _trial_row(result, keys: list[str], metric: str) -> dict[str, Any]:
    metrics = result.metrics or {}
    return {
        "trial_id": metrics.get("trial_id", os.path.basename(result.path)),
        "config": {k: _native(result.config.get(k)) for k in keys},
        metric: metrics.get(metric),
        "episode_reward_mean": metrics.get("episode_reward_mean"),
        "training_iteration": metrics.get("training_iteration"),
        "iterations_since_restore": metrics.get("iterations_since_restore"),  # fewer: cloned/restored (PBT)
        "timesteps_total": metrics.get("timesteps_total"),
        "checkpoint": result.checkpoint.path if result.checkpoint is not None else None,
        "error": f"{type(result.error).__name__}: {result.error}" if result.error else None,
    }


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and value == value and abs(value) != float("inf")
