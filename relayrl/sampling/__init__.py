"""Sampling: RolloutWorker and its gradient variant, evaluation, env state snapshots."""
