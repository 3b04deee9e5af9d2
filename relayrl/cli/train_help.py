"""`relayrl train --help`: what the flags do not say alone (the stop rule, where the config comes from,
the algorithms) and examples."""

from __future__ import annotations

DESCRIPTION = """\
Train ALGO on ENV until a stop rule holds, with progress lines, checkpoints and a final summary; the run's
files (TensorBoard, progress.csv, config.json, run.json, checkpoints/) go to --logdir."""

_EPILOG = """\
stop rule: training stops at the first --stop-* that holds; with none given, at the env's reward_threshold
(episode_reward_mean of the last 100 episodes; gymnasium's spec, when the env has one) or after 1,000,000
env steps, whichever comes first.

config: the algorithm's defaults < its tuned file for ENV (`relayrl list`) < --config < --set < flags.
With --resume: the checkpoint's config.json < --config < --set < flags (no tuned file); one line lists
what differs from the checkpoint.

algorithms: {algorithms}

examples:
  relayrl train ppo CartPole-v1
  relayrl train dqn CartPole-v1 --seed 0 --stop-timesteps 50000 --set lr=0.0005
  relayrl train ppo CartPole-v1 --set model.fcnet_hiddens=[32,32] --checkpoint-at-end --logdir runs/a
  relayrl train ppo CartPole-v1 --resume auto --logdir runs/a --stop-iters 50
  relayrl train ppo CartPole-v1 --resume auto        (the newest ppo CartPole-v1 run under ~/relayrl_results)
  relayrl train ppo CartPole-v1 --print-config > ppo.yaml; relayrl train ppo CartPole-v1 --config ppo.yaml
"""


def epilog() -> str:
    from relayrl.algorithms import REGISTRY  # names only: no algorithm module is imported

    return _EPILOG.format(algorithms=", ".join(sorted(REGISTRY)) + " (`relayrl list` describes each)")
