"""Text in, text out: an LLM-agent style environment trained through the policy server.

The env speaks in strings (gymnasium.spaces.Text both ways): each turn it gives an instruction such as
"please turn left now" and rewards the reply "left". A network needs numbers, so a TextCodec does
the translation at the server's boundary:
  - encode_observation: hashed bag of words -> a 64-dim vector (swap in any sentence embedding);
  - decode_action: the policy's Discrete(4) choice -> one of the reply strings (a tool-call vocabulary).
Clients send and receive plain strings; the server trains PPO on the encoded experience.

    PYTHONPATH=examples relayrl serve ppo --env text_commands:TextCommands-v0 \\
        --codec text_commands:CommandCodec --port 9901 \\
        --set train_batch_size=256 --set sgd_minibatch_size=64 --set lr=0.003 &
    python examples/text_commands.py --address http://127.0.0.1:9901
"""

from __future__ import annotations

import argparse
import string
import zlib

import gymnasium as gym
import numpy as np

from relayrl.envs.text import TextCodec

REPLIES = ("left", "right", "up", "down")
FILLER = ("please", "turn", "go", "now", "quickly", "the", "move", "then")
CHARSET = string.ascii_lowercase + " "
TURNS = 8


class CommandEnv(gym.Env):
    """Observation: an instruction (Text); action: the reply (Text); reward 1 for the right direction word."""

    def __init__(self, env_config: dict | None = None):
        self.observation_space = gym.spaces.Text(max_length=64, charset=CHARSET)
        self.action_space = gym.spaces.Text(max_length=8, charset=CHARSET)
        self._target, self._turn = "", 0

    def _instruction(self) -> str:
        self._target = REPLIES[self.np_random.integers(len(REPLIES))]
        words = list(self.np_random.choice(FILLER, size=3, replace=False)) + [self._target]
        self.np_random.shuffle(words)
        return " ".join(words)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._turn = 0
        return self._instruction(), {}

    def step(self, action: str):
        reward = float(action.strip() == self._target)
        self._turn += 1
        return self._instruction(), reward, False, self._turn >= TURNS, {}


gym.register(id="TextCommands-v0", entry_point=CommandEnv)


class CommandCodec(TextCodec):
    """Hashed bag of words for observations; a fixed vocabulary of replies for actions."""

    observation_space = gym.spaces.Box(0.0, 1.0, (64,), np.float32)
    action_space = gym.spaces.Discrete(len(REPLIES))

    def encode_observation(self, text: str) -> np.ndarray:
        vector = np.zeros(64, np.float32)
        for word in text.split():
            vector[zlib.crc32(word.encode()) % 64] = 1.0  # crc32, not hash(): the same on every process
        return vector

    def decode_action(self, action) -> str:
        return REPLIES[int(action)]


def run(address: str, episodes: int, seed: int = 0) -> list[float]:
    """Play `episodes` episodes against the server with text observations and actions; their returns."""
    from relayrl.policy_server import PolicyClient

    client, env, returns = PolicyClient(address), CommandEnv(), []
    obs, _ = env.reset(seed=seed)
    for _ in range(episodes):
        eid, total = client.start_episode(), 0.0
        while True:
            reply = client.get_action(eid, obs)  # a string, decoded by the server's codec
            obs, reward, terminated, truncated, _ = env.step(reply)
            client.log_returns(eid, reward)
            total += reward
            if terminated or truncated:
                client.end_episode(eid, obs, truncated=truncated)
                obs, _ = env.reset()
                returns.append(total)
                break
    client.close()
    return returns


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--address", default="http://127.0.0.1:9901")
    p.add_argument("--episodes", type=int, default=1000)
    args = p.parse_args()
    returns = run(args.address, args.episodes)
    for i in range(0, len(returns), 100):
        print(f"episodes {i}-{i + 99}: mean return {np.mean(returns[i : i + 100]):.2f} of {TURNS}")


if __name__ == "__main__":
    main()
