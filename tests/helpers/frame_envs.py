"""A synthetic image env for frame-stacking tests: each frame encodes (env seed, episode, step), so a stack
rebuilt from the wrong frames is visible; stacked k frames on the LAST axis like Atari's (84, 84, 4)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class EpisodeFrames(gym.Env):
    """Frames (height, width) uint8; episodes of random length in [min_len, max_len] that end terminated or
    truncated at random; reward = step + action. A frame is constant but for its first 4 bytes: seed, episode,
    step and a random byte (so neighbouring frames are sometimes equal: a static screen)."""

    def __init__(self, config: dict):
        self.height, self.width = config.get("height", 6), config.get("width", 5)
        self.min_len, self.max_len = config.get("min_len", 1), config.get("max_len", 6)
        self.static = config.get("static", 0.2)  # chance that a step repeats the previous frame
        self.observation_space = gym.spaces.Box(0, 255, (self.height, self.width), np.uint8)
        self.action_space = gym.spaces.Discrete(2)
        self.episode, self.seed_byte, self.rng = -1, 0, np.random.default_rng(0)

    def _frame(self) -> np.ndarray:
        if self.step_no and self.rng.random() < self.static:
            return self.last.copy()
        frame = np.full((self.height, self.width), 7, np.uint8)
        frame.flat[:4] = (self.seed_byte, self.episode % 256, self.step_no % 256, self.rng.integers(256))
        self.last = frame
        return frame

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.rng, self.seed_byte = np.random.default_rng(seed), seed % 256
        self.episode += 1
        self.step_no, self.length = 0, int(self.rng.integers(self.min_len, self.max_len + 1))
        return self._frame(), {}

    def step(self, action):
        self.step_no += 1
        done = self.step_no >= self.length
        terminated = done and bool(self.rng.random() < 0.5)
        return self._frame(), float(self.step_no + int(action)), terminated, done and not terminated, {}


def stacked(config: dict) -> gym.Env:
    """EpisodeFrames in a FrameStackObservation of config['k'] frames (padding: the reset frame), stack axis
    moved last: (height, width, k)."""
    k = config.get("k", 4)
    env = gym.wrappers.FrameStackObservation(EpisodeFrames(config), k)
    space = env.observation_space
    last = gym.spaces.Box(0, 255, (*space.shape[1:], k), np.uint8)
    return gym.wrappers.TransformObservation(
        env, lambda obs: np.ascontiguousarray(np.moveaxis(obs, 0, -1)), last
    )


class AtariShapedFrames:
    """A vector of num_envs synthetic (84, 84, k) uint8 stack streams with gymnasium's NEXT_STEP autoreset,
    generated with numpy alone (fast enough to make 1M transitions in seconds): each new frame is constant but
    for its first bytes (env, episode, step); a reset stack repeats the reset frame k times, as
    FrameStackObservation pads. Episodes last min_len..max_len steps, half end terminated."""

    def __init__(self, num_envs: int, k: int = 4, size: int = 84, min_len: int = 100, max_len: int = 2000):
        self.num_envs, self.k, self.size = num_envs, k, size
        self.min_len, self.max_len = min_len, max_len
        self.rng = np.random.default_rng(0)
        self.stacks = np.zeros((num_envs, size, size, k), np.uint8)
        self.episode = np.zeros(num_envs, np.int64)
        self.step_no = np.zeros(num_envs, np.int64)
        self.length = np.zeros(num_envs, np.int64)
        self.needs_reset = np.zeros(num_envs, bool)

    def _frames(self, envs: np.ndarray) -> np.ndarray:
        frames = np.full((len(envs), self.size, self.size), 7, np.uint8)
        frames[:, 0, 0], frames[:, 0, 1] = envs % 256, self.episode[envs] % 256
        frames[:, 0, 2], frames[:, 0, 3] = self.step_no[envs] % 256, self.step_no[envs] // 256 % 256
        return frames

    def _reset(self, envs: np.ndarray) -> None:
        self.episode[envs] += 1
        self.step_no[envs] = 0
        self.length[envs] = self.rng.integers(self.min_len, self.max_len + 1, len(envs))
        self.stacks[envs] = self._frames(envs)[..., None]

    def reset(self, seed: int | None = None):
        self.rng = np.random.default_rng(seed)
        self._reset(np.arange(self.num_envs))
        return self.stacks.copy(), {}

    def step(self, actions: np.ndarray):
        resetting = np.flatnonzero(self.needs_reset)
        stepping = np.flatnonzero(~self.needs_reset)
        self._reset(resetting)
        self.step_no[stepping] += 1
        if self.k == 4 and np.little_endian and len(resetting) == 0:  # all 4 bytes of a pixel in one word
            words = self.stacks.view(np.uint32)[..., 0]
            words >>= 8
            words |= self._frames(stepping).astype(np.uint32) << 24
        else:
            self.stacks[stepping] = np.concatenate(
                [self.stacks[stepping, ..., 1:], self._frames(stepping)[..., None]], axis=-1
            )
        rewards = np.where(self.needs_reset, 0.0, 1.0 + np.asarray(actions)).astype(np.float32)
        done = ~self.needs_reset & (self.step_no >= self.length)
        terminated = done & (self.episode % 2 == 0)
        self.needs_reset = done
        return self.stacks.copy(), rewards, terminated, done & ~terminated, {}


class FragmentSource:
    """One worker's fragments from a vector env with NEXT_STEP autoreset (random actions), rows built like
    RolloutWorker._transitions (reset steps dropped), in both layouts from the same steps: (whole stacks,
    compact rows from frame_rows.compact_transitions, the function _transitions calls)."""

    def __init__(self, env, worker: int, length: int, n_step: int, spec: dict, whole: bool = True):
        self.env, self.worker, self.length, self.n_step, self.spec, self.whole = (
            env,
            worker,
            length,
            n_step,
            spec,
            whole,
        )
        self.obs, _ = env.reset(seed=100 * worker)
        self.rng = np.random.default_rng(worker)
        self.prev_done = np.zeros(env.num_envs, bool)

    def fragment(self) -> tuple[dict | None, dict]:
        from relayrl.core import ops
        from relayrl.sampling import frame_rows

        obs_l, act_l, rew_l, term_l, trunc_l = [self.obs], [], [], [], []
        for _ in range(self.length):
            actions = self.rng.integers(0, 2, self.env.num_envs)
            self.obs, rew, term, trunc, _ = self.env.step(actions)
            obs_l.append(self.obs), act_l.append(actions), rew_l.append(rew)
            term_l.append(term), trunc_l.append(trunc)
        obs_buf, acts = np.stack(obs_l), np.stack(act_l)
        rewards, terminated = np.asarray(rew_l, np.float32), np.asarray(term_l)
        dones = terminated | np.asarray(trunc_l)
        valid = np.concatenate([~self.prev_done[None], ~dones[:-1]])
        self.prev_done = dones[-1].copy()
        returns, next_index, discounts = ops.n_step_transitions(rewards, terminated, dones, 0.9, self.n_step)
        keep = valid.reshape(-1)
        T, N = rewards.shape
        naive = None
        if self.whole:
            naive = {
                "obs": obs_buf[:T].reshape(T * N, *obs_buf.shape[2:])[keep],
                "actions": acts.reshape(-1)[keep],
                "rewards": returns.reshape(-1)[keep],
                "next_obs": obs_buf[next_index, np.arange(N)].reshape(T * N, *obs_buf.shape[2:])[keep],
                "discounts": discounts.reshape(-1)[keep],
            }
        parts = (acts, returns, discounts, next_index, keep)
        return naive, frame_rows.compact_transitions(obs_buf, *parts, self.spec, self.worker)


TRANSITIONS_SPEC = {
    "obs": ((), np.uint8),
    "actions": ((), np.int64),
    "rewards": ((), np.float32),
    "next_obs": ((), np.uint8),
    "discounts": ((), np.float32),
}
