#!/usr/bin/env bash
# Creates benchmarks/anchors/.venv with the incumbents (SB3, RLlib, CleanRL) from PyPI, separate from
# relayrl's own venv so neither library's pins leak into the other. Idempotent and quiet: re-running only
# installs what is missing.
#
# torch is pinned to 2.13.0: the CPU build of exactly that version lies on this machine's disk; any other
# spec (or a package asking for plain `torch` first) pulls a multi-GB CUDA build.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv"
py="${PYTHON:-python3}"

[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
pip_install() { "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-warn-script-location "$@"; }

# torch first, so nothing later can ask for a different (CUDA) build.
"$venv/bin/python" -c "import torch" 2>/dev/null || pip_install torch==2.13.0
# Ray pinned to relayrl's own version (pyproject.toml: ray[default]==2.60.*). No box2d extra: no workload
# uses it and box2d-py builds from source with a `swig` binary this machine lacks.
# Atari (W7, W8, W9): ale-py pinned to the release in relayrl's .venv (0.12.1, from its `atari` extra; the
# ROMs ship inside the wheel) so both sides emulate the same ALE; OpenCV (headless) is what SB3's AtariWrapper
# and RLlib's atari_wrappers resize frames with.
pip_install "torch==2.13.0" "stable-baselines3" "ray[rllib]==2.60.*" \
    "gymnasium[classic-control,mujoco,atari]" "ale-py==0.12.1" "opencv-python-headless" \
    "psutil" "tyro" "tensorboard"
# CleanRL's PyPI package pins old gymnasium/numpy releases; install it without letting it downgrade the
# shared stack. Its scripts (cleanrl/ppo.py, ...) are run as modules from site-packages, never vendored.
"$venv/bin/python" -c "import cleanrl" 2>/dev/null || pip_install --no-deps cleanrl || \
    echo "setup.sh: cleanrl could not be installed from PyPI (see above)" >&2
"$venv/bin/python" - <<'PY'
import importlib
for name in ("torch", "stable_baselines3", "ray", "gymnasium", "ale_py", "cv2", "cleanrl"):
    try:
        mod = importlib.import_module(name)
        print(f"{name}=={getattr(mod, '__version__', '?')}")
    except Exception as exc:  # report, don't fail: cleanrl is optional
        print(f"{name}: NOT AVAILABLE ({type(exc).__name__}: {exc})")
try:  # the Atari workloads need the ROMs that ship inside ale-py's wheel
    import ale_py
    import gymnasium as gym

    gym.register_envs(ale_py)
    gym.make("ALE/Breakout-v5", frameskip=1).reset(seed=0)
    print("ALE/Breakout-v5: ok")
except Exception as exc:
    print(f"ALE/Breakout-v5: NOT AVAILABLE ({type(exc).__name__}: {exc})")
PY
