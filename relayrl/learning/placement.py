"""Where the learner runs and on what: TensorFlow device visibility, threads and the distribution strategy
of the process that hosts it (the driver, or a Ray actor holding the GPUs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relayrl.models import tf_import


def resolve_placement(learner_placement: str, num_gpus: float) -> str:
    """'auto' -> 'actor' when GPUs are asked for (the actor holds them; workers stay CPU-only), else
    'driver'."""
    if learner_placement != "auto":
        return learner_placement
    return "actor" if num_gpus > 0 else "driver"


def configure_tensorflow(num_gpus: float, threads: Any, mlp: bool) -> None:
    """Device visibility and thread pools for the learner's process. num_gpus=0 hides GPUs (the learner
    runs where it was asked to); num_gpus >= 1 needs that many visible GPUs."""
    tf = tf_import.load()
    gpus = tf.config.list_physical_devices("GPU")
    if num_gpus > len(gpus):
        raise ValueError(
            f"num_gpus = {num_gpus} but TensorFlow sees {len(gpus)} GPU(s) in the learner's process; "
            f"allowed: 0..{len(gpus)}"
        )
    try:
        if num_gpus == 0 and gpus:
            tf.config.set_visible_devices([], "GPU")
    except RuntimeError:
        pass  # TensorFlow already initialised its devices in this process
    if threads == "auto":
        threads = 1 if (mlp and num_gpus == 0) else 0  # small MLP ops run fastest unthreaded; 0 = all cores
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(min(threads, 2) if threads else 0)
    except RuntimeError:
        pass  # TensorFlow already ran ops in this process (a second algorithm): its pools are fixed now


def make_strategy(num_gpus: float):
    """MirroredStrategy over the visible GPUs when more than one is asked for, else None (one replica)."""
    if num_gpus <= 1:
        return None
    if num_gpus != int(num_gpus):
        raise ValueError(
            f"num_gpus = {num_gpus}: more than one GPU must be a whole number (MirroredStrategy)"
        )
    tf = tf_import.load()
    gpus = [f"/gpu:{i}" for i in range(int(num_gpus))]
    return tf.distribute.MirroredStrategy(devices=gpus)


def build_learner_here(factory: Callable[..., Any], num_gpus: float, threads: Any, mlp: bool):
    """Configure this process for the learner and build it: factory(strategy=...) -> Learner."""
    configure_tensorflow(num_gpus, threads, mlp)
    return factory(strategy=make_strategy(num_gpus))


def build_eagerly(factory: Callable[..., Any], **kwargs: Any):
    """factory(**kwargs) with tf.config.run_functions_eagerly(True) in this (the learner's) process, for
    `.debugging(eager=True)`: the Learner then skips tracing and runs its steps op by op, and every other
    tf.function called in this process afterwards runs eagerly too."""
    tf_import.load().config.run_functions_eagerly(True)
    return factory(**kwargs)


def device_report(learner) -> dict:
    """What this process's TensorFlow sees and where the learner's variables live (for checks and logs)."""
    tf = tf_import.load()
    return {
        "visible_gpus": [d.name for d in tf.config.list_logical_devices("GPU")],
        "variable_devices": sorted({getattr(v, "value", v).device for v in learner.model.ordered_variables}),
        "replicas": learner.strategy.num_replicas_in_sync,
        "eager": learner.eager,
    }


def refuse_learner_settings(config: Any, allowed: dict[str, tuple], reason: str) -> None:
    """For an algorithm whose learner cannot follow some learner settings (num_gpus, learner_placement,
    learner_threads, eager): ValueError naming the first field set to a value it would otherwise ignore."""
    for name, values in allowed.items():
        value = getattr(config, name)
        if value not in values:
            shown = " or ".join(repr(v) for v in values)
            raise ValueError(
                f"{type(config).__name__}.{name} = {value!r} is invalid: allowed: {shown} ({reason})"
            )


def refuse_actor_learner(config: Any, reason: str) -> None:
    """ValueError when the config puts the learner in a Ray actor (learner_placement, or 'auto' with
    num_gpus > 0) though this mode needs it on the driver."""
    if resolve_placement(config.learner_placement, config.num_gpus) == "actor":
        name = "learner_placement" if config.learner_placement != "auto" else "num_gpus"
        allowed = "'driver'" if name == "learner_placement" else "0"
        value = getattr(config, name)
        raise ValueError(
            f"{type(config).__name__}.{name} = {value!r} is invalid: allowed: {allowed} ({reason})"
        )
