"""RolloutWorker: vector envs + Policy -> version-stamped fragments with advantages computed here.

The same class runs in the driver (num_rollout_workers=0, no Ray) and inside a Ray actor
(runtime/ray_workers.py wraps it). It imports neither Ray nor TensorFlow for MLP policies.
"""

from __future__ import annotations

import time

import numpy as np

from relayrl.core import ops
from relayrl.core.types import Fragment
from relayrl.envs.make import env_name, env_seed
from relayrl.models.networks import preprocess_obs
from relayrl.models.obs_stats import RunningMoments, moments
from relayrl.models.policy import Policy
from relayrl.sampling.learner_signals import LearnerSignals, scaled_rewards
from relayrl.sampling.settings import (
    EnvError,
    Exploration,
    SamplerSettings,
    batch_spec,
)


class RolloutWorker:
    """Loop that uses it:  worker.set_weights(w, version); fragment = worker.sample()."""

    def __init__(self, settings: SamplerSettings, worker_index: int = 0):
        self.s = settings
        self.worker_index = worker_index
        self._batch_spec = batch_spec(settings.spec, settings.postprocess)
        self.env = settings.make_envs()
        seed = env_seed(settings.seed, worker_index)
        self.policy = Policy(
            settings.spec,
            self.env.single_action_space,
            seed=None if seed is None else seed + 7919,  # action noise stream != env stream
            explore=settings.explore.for_worker(worker_index).policy_settings(),
        )
        raw_obs, info = self.env.reset(seed=seed)
        self.obs = preprocess_obs(settings.spec, raw_obs)
        self.signals = LearnerSignals(*settings.learner_signals(), settings.num_envs)
        self.signals.start(info)
        # a TF network (conv torso) gives the step's values with its actions: GAE needs no second pass
        self._step_values = settings.postprocess == "gae" and not settings.spec.numpy_forward_ok
        already_prepared = (
            settings.spec.obs_kind == "box" and raw_obs.dtype == np.float32 and raw_obs.ndim == 2
        )
        self._prep = (lambda o: o) if already_prepared else (lambda o: preprocess_obs(settings.spec, o))
        n = settings.num_envs
        self.prev_done = np.zeros(n, dtype=bool)  # NEXT_STEP autoreset: the next step is a reset step
        self.env_recreations = 0
        self.ep_return = np.zeros(n, dtype=np.float64)
        self.ep_length = np.zeros(n, dtype=np.int64)
        self.disc_return = np.zeros(n, dtype=np.float64)  # scale_rewards: running discounted return per env
        self.return_moments = RunningMoments(())

    def set_weights(self, weights: list[np.ndarray], version: int) -> None:
        self.policy.set_weights(weights, version)

    def get_state(self) -> dict:
        """Everything that makes the next fragment what it will be (sampling/worker_state.py)."""
        from relayrl.sampling.worker_state import capture

        return capture(self)

    def set_state(self, state: dict) -> None:
        """Restore get_state()'s output, read from a checkpoint file (checked field by field first)."""
        from relayrl.sampling.worker_state import restore

        restore(self, state)

    def set_explore(self, explore: Exploration) -> None:
        """The same settings on every worker (e.g. the driver's current epsilon): no per-worker spread."""
        self.policy.set_explore(explore.policy_settings())

    def get_weights(self) -> tuple[list[np.ndarray], int]:
        return self.policy.get_weights(), self.policy.version

    def sample(self) -> Fragment:
        """One fragment; an env that raises is rebuilt in place and the fragment resampled when
        recreate_failed_envs is set (up to 3 times), else the error propagates with the worker named."""
        for attempt in range(4):
            try:
                return self._sample()
            except EnvError:
                raise
            except Exception as exc:  # noqa: BLE001 - any env failure: report or recover, never hide
                if not self.s.recreate_failed_envs or attempt == 3:
                    raise EnvError(
                        f"environment {env_name(self.s.env)!r} raised on worker {self.worker_index}: "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                self._recreate_envs(attempt + 1)
        raise AssertionError("unreachable")

    def _recreate_envs(self, attempt: int) -> None:
        try:
            self.env.close()
        except Exception:  # noqa: BLE001 - the broken env may not even close
            pass
        self.env = self.s.make_envs()
        seed = env_seed(self.s.seed, self.worker_index)
        raw_obs, info = self.env.reset(seed=None if seed is None else seed + 100_000 * attempt)
        self.obs = preprocess_obs(self.s.spec, raw_obs)
        self.signals.start(info)
        self.prev_done[:] = False
        self.ep_return[:], self.ep_length[:] = 0.0, 0
        self.env_recreations += 1

    def _sample(self) -> Fragment:
        """Step all envs fragment_length times with one batched policy call per step.

        The loop body is kept to the policy call, env.step and array stores (it runs ~15k times a
        second): exploration noise is drawn per fragment, and validity, episode statistics, log-probs,
        values and advantages are computed afterwards on whole arrays."""
        start, cpu_start = time.perf_counter(), time.process_time()
        T, N = self.s.fragment_length, self.s.num_envs
        noise = self.policy.draw_noise(T, N)
        sample_step, env_actions, step, prep = (
            self.policy.sample_step_with_values if self._step_values else self.policy.sample_step,
            self.policy.env_actions,
            self.env.step,
            self._prep,
        )
        obs, track_lives, step_lives = self.obs, self.signals.tracks_lives, self.signals.step_lives
        # list appends: ~10x cheaper than array stores
        obs_l, act_l, dist_l, rew_l, term_l, trunc_l, lives_l = [obs], [], [], [], [], [], []
        self._step_values_l: list = []  # [T] of [N]: the values sample_step_with_values gave
        for t in range(T):
            actions, dist_inputs, *values = sample_step(obs, noise[t])
            self._step_values_l += values
            raw_obs, rew, term, trunc, info = step(env_actions(actions))
            obs = prep(raw_obs)
            obs_l.append(obs), act_l.append(actions), dist_l.append(dist_inputs)
            rew_l.append(rew), term_l.append(term), trunc_l.append(trunc)
            if track_lives:
                lives_l.append(step_lives(info))
        self.obs = obs
        rewards = np.asarray(rew_l, np.float32)  # [T, N]
        terminated, truncated = np.asarray(term_l, bool), np.asarray(trunc_l, bool)
        dones = terminated | truncated
        valid = np.empty((T, N), bool)  # NEXT_STEP autoreset: the step after a done only resets the env
        valid[0] = ~self.prev_done
        valid[1:] = ~dones[:-1]
        self.prev_done = dones[-1].copy()
        returns, lengths = self._episode_stats(rewards, dones, valid)  # from the env's own rewards
        # the learner's view: a lost life ends its episode, rewards clipped (atari options)
        rewards, terminated, dones = self.signals.apply(rewards, terminated, dones, valid, lives_l)
        if self.s.scale_rewards:
            rewards = self._scaled_rewards(rewards, dones, valid)
        obs_buf = np.stack(obs_l)
        # running observation statistics: the observations actually acted on (reset steps excluded)
        obs_moments = moments(obs_buf[:T][valid]) if self.s.spec.obs_norm else None
        post = {"gae": self._postprocess, "sequences": self._sequences, "transitions": self._transitions}[
            self.s.postprocess
        ]
        data = post(obs_buf, np.stack(act_l), np.stack(dist_l), rewards, terminated, dones, valid)
        return Fragment(
            data=data,
            version=self.policy.version,
            worker_index=self.worker_index,
            env_steps=int(valid.sum()),
            episode_returns=returns,
            episode_lengths=lengths,
            sample_time_s=time.perf_counter() - start,
            cpu_time_s=time.process_time() - cpu_start,
            obs_moments=obs_moments,
        )

    def _episode_stats(self, rewards: np.ndarray, dones: np.ndarray, valid: np.ndarray):
        """Returns and lengths of the episodes that ended in this fragment; running sums carry over."""
        cum_r = np.cumsum(rewards, axis=0, dtype=np.float64) + self.ep_return  # [T, N]
        cum_l = np.cumsum(valid, axis=0, dtype=np.int64) + self.ep_length
        base_r, base_l = np.zeros_like(self.ep_return), np.zeros_like(self.ep_length)
        returns, lengths = [], []
        for t, n in zip(*np.nonzero(dones)):  # time order within each env
            returns.append(cum_r[t, n] - base_r[n])
            lengths.append(cum_l[t, n] - base_l[n])
            base_r[n], base_l[n] = cum_r[t, n], cum_l[t, n]
        self.ep_return, self.ep_length = cum_r[-1] - base_r, cum_l[-1] - base_l
        return np.asarray(returns, np.float32), np.asarray(lengths, np.int64)

    def _scaled_rewards(self, rewards: np.ndarray, dones: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """scale_rewards: learner_signals.scaled_rewards with this worker's running statistics."""
        args = (self.disc_return, self.return_moments, self.s.gamma)
        scaled, self.disc_return = scaled_rewards(rewards, dones, valid, *args)
        return scaled

    def _postprocess(
        self, obs_buf, act_buf, dist_buf, rewards, terminated, dones, valid
    ) -> dict[str, np.ndarray]:
        """Behaviour log-probs, values and GAE for the whole fragment in batched passes; drop reset steps."""
        T, N = rewards.shape
        self._check_finite(obs_buf, "observation")
        self._check_finite(rewards, "reward")
        flat_obs = obs_buf.reshape((T + 1) * N, *obs_buf.shape[2:])
        flat_act = act_buf.reshape(T * N, *act_buf.shape[2:])
        logp = self.policy.log_prob(dist_buf.reshape(T * N, -1), flat_act)
        if self._step_values:  # the last observation's value is the only one not computed while stepping
            values = np.stack([*self._step_values_l, self.policy.net.value(obs_buf[T])]).astype(np.float32)
        else:
            values = self.policy.net.value(flat_obs).astype(np.float32).reshape(T + 1, N)
        adv = ops.gae(rewards, values[:-1], values[1:], terminated, dones, self.s.gamma, self.s.lambda_)
        keep = valid.reshape(-1)
        columns = {
            "obs": flat_obs[: T * N][keep],
            "actions": flat_act[keep],
            "logp": logp[keep],
            "vf_preds": values[:-1].reshape(-1)[keep],
            "advantages": adv.reshape(-1)[keep],
            "value_targets": (adv + values[:-1]).reshape(-1)[keep],
        }
        return {k: columns[k].astype(dtype, copy=False) for k, (_, dtype) in self._batch_spec.items()}

    def _transitions(
        self, obs_buf, act_buf, dist_buf, rewards, terminated, dones, valid
    ) -> dict[str, np.ndarray]:
        """n-step replay rows (obs, action, discounted n-step reward, bootstrap obs, bootstrap discount);
        the bootstrap obs of a truncated episode is its final observation, of a terminated one
        discounted to 0."""
        T, N = rewards.shape
        self._check_finite(obs_buf, "observation")
        self._check_finite(rewards, "reward")
        returns, next_index, discounts = ops.n_step_transitions(
            rewards, terminated, dones, self.s.gamma, self.s.n_step
        )
        keep = valid.reshape(-1)
        if self.s.frame_stack > 1:  # each frame once: the replay rebuilds the stacks (frame_rows.py)
            from relayrl.sampling.frame_rows import compact_transitions

            parts = (act_buf, returns, discounts, next_index, keep)
            return compact_transitions(obs_buf, *parts, self._batch_spec, self.worker_index)
        next_obs = obs_buf[next_index, np.arange(N)]  # [T, N, ...]
        columns = {
            "obs": obs_buf[:T].reshape(T * N, *obs_buf.shape[2:])[keep],
            "actions": act_buf.reshape(T * N, *act_buf.shape[2:])[keep],
            "rewards": returns.reshape(-1)[keep],
            "next_obs": next_obs.reshape(T * N, *obs_buf.shape[2:])[keep],
            "discounts": discounts.reshape(-1)[keep],
        }
        return {k: columns[k].astype(dtype, copy=False) for k, (_, dtype) in self._batch_spec.items()}

    def _sequences(
        self, obs_buf, act_buf, dist_buf, rewards, terminated, dones, valid
    ) -> dict[str, np.ndarray]:
        """Time-major columns, reset steps kept and marked: obs [T+1, N, ...] (obs[t+1] is the final
        observation when step t ended an episode), actions / behaviour logp / rewards / terminated / dones /
        valid [T, N]. No value pass here: the learner evaluates its own, newer, network on them."""
        T, N = rewards.shape
        self._check_finite(obs_buf, "observation")
        self._check_finite(rewards, "reward")
        logp = self.policy.log_prob(dist_buf.reshape(T * N, -1), act_buf.reshape(T * N, *act_buf.shape[2:]))
        return {
            "obs": obs_buf,
            "actions": act_buf,
            "logp": logp.astype(np.float32).reshape(T, N),
            "rewards": rewards,
            "terminated": terminated,
            "dones": dones,
            "valid": valid,
        }

    def _check_finite(self, array: np.ndarray, what: str) -> None:
        if np.issubdtype(array.dtype, np.floating) and not np.isfinite(array).all():
            raise EnvError(
                f"environment {env_name(self.s.env)!r} on worker {self.worker_index} returned a non-finite "
                f"{what} (NaN or Inf); check the env or wrap it to sanitise its output"
            )

    def stop(self) -> None:
        self.env.close()
