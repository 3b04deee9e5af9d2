"""CleanRL anchor: runs CleanRL's own scripts from the PyPI package (`python -m cleanrl.ppo ...`, never a
vendored copy) with their defaults, and parses the episode returns they print.

    python benchmarks/anchors/cleanrl_runner.py --workload W1 --seed 0

Status on this machine (2026-12-02): the newest CleanRL on PyPI is 0.4.8 (2021). Its scripts import `gym`
(OpenAI Gym <= 0.21: `from gym.wrappers import Monitor`), which cannot be installed here any more:
`pip install gym==0.21.0` fails with "error in gym setup command: 'extras_require' must be a dictionary
whose values are strings or lists of strings containing valid project/version requirement specifiers",
and gym 0.26.2 (installable) no longer has `gym.wrappers.Monitor` ("ImportError: cannot import name
'Monitor' from 'gym.wrappers'"). So every run here ends with the script's own import error, which this
runner reports in the JSON line's `error` field. CleanRL's current scripts (gymnasium, tyro) live only in
its GitHub repository, not on PyPI; running them would mean vendoring, which these benchmarks don't do.
"""

from __future__ import annotations

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

# The scripts' defaults except the env id, seed, step cap and CPU (their --cuda defaults to True).
SCRIPTS = {
    "W1": "cleanrl.ppo",
    "W2": "cleanrl.dqn",
    "W4": "cleanrl.ppo_continuous_action",
    "W4R": "cleanrl.ppo_continuous_action",
    "W6": "cleanrl.sac_continuous_action",
}
EPISODE = re.compile(r"global_step=(\d+), episode_reward=([-\d.eE+]+)|Step: (\d+), Ep\. Reward: ([-\d.eE+]+)")


def make_cmd(w: common.Workload, seed: int, variant: str):
    if w.name not in SCRIPTS:
        raise NotImplementedError(f"CleanRL has no script for {w.name}")
    return [
        common.ANCHOR_PYTHON,
        "-m",
        SCRIPTS[w.name],
        "--gym-id",
        w.env,
        "--seed",
        str(seed),
        "--total-timesteps",
        str(w.cap),
        "--cuda",
        "False",
    ], None


def parse(line: str, now: float, run: common.Run, window) -> bool:
    m = EPISODE.search(line)
    if not m:
        return False
    steps, ret = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    return window.add(now, int(steps), float(ret), run)


if __name__ == "__main__":
    common.cli("cleanrl", make_cmd, lambda: common.anchor_version("cleanrl"), line_parser=parse)
