"""The learner in a Ray actor that holds the learner's GPUs (the workers stay CPU-only, and the driver
never imports TensorFlow): LearnerHost is the actor body, RemoteLearner the driver's proxy of it."""

from __future__ import annotations

import numpy as np
import ray

from relayrl.runtime.cluster import init_ray, remote_class


class LearnerHost:
    """Actor body: a Learner built inside this process (which may hold GPUs)."""

    def __init__(self, factory, num_gpus: float, threads, mlp: bool):
        from relayrl.learning.placement import build_learner_here

        self.learner = build_learner_here(factory, num_gpus, threads, mlp)

    def update(self, batch: dict, minibatch_indices: np.ndarray) -> tuple[dict, np.ndarray | None]:
        """The update's stats, and its per-row output (DQN's TD errors: the replay's new priorities)."""
        stats = self.learner.update(batch, minibatch_indices)
        return stats, self.learner.last_rows

    def apply_gradients(self, grads: list[np.ndarray]) -> float:
        return self.learner.apply_gradients(grads)

    def get_weights(self) -> list[np.ndarray]:
        return self.learner.get_weights()

    def set_weights(self, weights: list[np.ndarray]) -> None:
        self.learner.set_weights(weights)

    def part_weights(self, part: str) -> list[np.ndarray]:
        return self.learner.part_weights(part)

    def set_lr(self, lr: float) -> None:
        self.learner.set_lr(lr)

    def save_checkpoint(self, directory: str) -> None:
        self.learner.save_checkpoint(directory)

    def restore_checkpoint(self, directory: str) -> None:
        self.learner.restore_checkpoint(directory)

    def placement(self) -> dict:
        """Where the learner's variables live and what this process can see (for checks and logs)."""
        import os
        import socket

        from relayrl.learning.placement import device_report

        return {
            "node_id": ray.get_runtime_context().get_node_id(),
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "gpu_ids": ray.get_gpu_ids(),
            **device_report(self.learner),
        }


class RemoteLearner:
    """The Learner interface (core.contracts.GradientLearner, RemoteWeights, Stoppable) over a Ray actor
    that holds the learner's GPUs. It reserves no CPU: like the driver, it shares the machine with the
    workers."""

    def __init__(self, factory, num_gpus: float, threads, mlp: bool, address: str | None = None):
        self._owns_ray = init_ray(address)
        self.actor = None
        self.last_rows: np.ndarray | None = None  # the last update's per-row output, as Learner.last_rows
        available = ray.cluster_resources().get("GPU", 0.0)
        if num_gpus > available:
            self.stop()
            raise ValueError(
                f"num_gpus = {num_gpus} but the Ray cluster has {available:g} GPU(s); "
                f"allowed: 0..{available:g}"
            )
        host = remote_class(LearnerHost).options(num_gpus=num_gpus, num_cpus=0)
        self.actor = host.remote(factory, num_gpus, threads, mlp)
        try:
            self.placement = ray.get(self.actor.placement.remote())  # surfaces build errors now
        except Exception:
            self.stop()
            raise

    def update(self, batch: dict, minibatch_indices: np.ndarray) -> dict:
        stats, self.last_rows = ray.get(self.actor.update.remote(batch, minibatch_indices))
        return stats

    def apply_gradients(self, grads: list[np.ndarray]) -> float:
        return ray.get(self.actor.apply_gradients.remote(grads))

    def get_weights(self) -> list[np.ndarray]:
        return ray.get(self.actor.get_weights.remote())

    def weights_ref(self) -> ray.ObjectRef:
        """The weights as an object in the store, written by the learner's process."""
        return self.actor.get_weights.remote()

    def set_weights(self, weights: list[np.ndarray]) -> None:
        ray.get(self.actor.set_weights.remote(weights))

    def part_weights(self, part: str) -> list[np.ndarray]:
        return ray.get(self.actor.part_weights.remote(part))

    def set_lr(self, lr: float) -> None:
        ray.get(self.actor.set_lr.remote(lr))

    def save_checkpoint(self, directory: str) -> None:
        """The actor writes its TF checkpoint (models and optimiser) itself: the directory must be on a file
        system it shares with the driver (always true on one machine)."""
        ray.get(self.actor.save_checkpoint.remote(directory))

    def restore_checkpoint(self, directory: str) -> None:
        ray.get(self.actor.restore_checkpoint.remote(directory))

    def stop(self) -> None:
        if self.actor is not None:
            ray.kill(self.actor)
            self.actor = None
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False
