#!/usr/bin/env bash
# Creates benchmarks/anchors/.venv-tianshou for Tianshou, issue 17's MuJoCo reference (tianshou_runner.py).
# A venv of its own: tianshou 2.0 requires pandas < 3 and, through virtualenv < 21, an older filelock, which
# the incumbents' venv (ray[rllib]) does not allow. torch is the same CPU build as there (setup.sh says why it
# is pinned); plain `tianshou`, not its `mujoco` extra, which requires mujoco < 3 where gymnasium's v5 envs
# run on mujoco 4. Idempotent: re-running only installs what is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv-tianshou"
py="${PYTHON:-python3}"

[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
"$venv/bin/python" -c "import tianshou, psutil, mujoco" 2>/dev/null && exit 0
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-warn-script-location \
    "torch==2.13.0" "tianshou==2.0.*" "gymnasium[mujoco]==1.2.2" "psutil"
"$venv/bin/python" -c "import tianshou, torch, gymnasium; print('tianshou', tianshou.__version__, 'torch', \
torch.__version__, 'gymnasium', gymnasium.__version__); gymnasium.make('Hopper-v5').reset(seed=0); print('Hopper-v5: ok')"
