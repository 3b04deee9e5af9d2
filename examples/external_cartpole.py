"""An external simulator driving CartPole over HTTP against `relayrl serve`: the client owns the env
and asks the server for every action; the server trains PPO on what the clients report.

    relayrl serve ppo --env CartPole-v1 --port 9900 &            # prints the URL it serves on
    python examples/external_cartpole.py --address http://127.0.0.1:9900 [--seed 1]

The client stops by itself after --max-seconds / --max-episodes, or when the server goes away.
"""

from __future__ import annotations

import argparse
import http.client
import time

import gymnasium as gym

from relayrl.policy_server import EpisodeLostError, PolicyClient, PolicyServerError


def run(address: str, seed: int = 0, max_seconds: float = 600.0, max_episodes: int | None = None) -> int:
    """Play episodes until a limit is reached or the server stops answering; returns episodes played."""
    client = PolicyClient(address)
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=seed)
    deadline, episodes = time.monotonic() + max_seconds, 0
    try:
        while time.monotonic() < deadline and (max_episodes is None or episodes < max_episodes):
            episode_id = client.start_episode()
            try:
                while True:
                    action = client.get_action(episode_id, obs)
                    obs, reward, terminated, truncated, _ = env.step(action)
                    client.log_returns(episode_id, reward)
                    if terminated or truncated:
                        # truncated (the 500-step limit): the server bootstraps from V(obs), as gymnasium
                        # means it
                        client.end_episode(episode_id, obs, truncated=truncated)
                        episodes += 1
                        break
            except EpisodeLostError:
                pass  # the server restarted or evicted this idle episode: play a new one from a fresh reset
            obs, _ = env.reset()
    except (ConnectionError, OSError, http.client.HTTPException):
        pass  # the server stopped (e.g. it reached its --stop-reward), possibly cutting a reply short
    except PolicyServerError as exc:
        if exc.status != 503:  # 503: the server is stopping (or overloaded); anything else is a bug to show
            raise
    finally:
        client.close()
        env.close()
    return episodes


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--address", default="http://127.0.0.1:9900")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-seconds", type=float, default=600.0)
    p.add_argument("--max-episodes", type=int, default=None)
    args = p.parse_args()
    played = run(args.address, args.seed, args.max_seconds, args.max_episodes)
    print(f"played {played} episodes")


if __name__ == "__main__":
    main()
