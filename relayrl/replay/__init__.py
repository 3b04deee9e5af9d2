"""Replay buffers with one interface (numpy ring storage of fixed capacity):

    buffer.add({"obs": [B, ...], "actions": [B, ...], ...})     # columns of equal length
    batch = buffer.sample(batch_size)   # columns, plus "indices" and "weights" (IS weights; 1 if uniform)
    buffer.update_priorities(batch["indices"], new_priorities)    # no-op for uniform replay
    state = buffer.state(); buffer.load_state(state)              # dict of numpy arrays (-> .npz checkpoints)

Backends: `UniformReplay`, `PrioritizedReplay` (sum tree); sharded Ray actors and Redis build on them.
"""

from relayrl.replay.prioritized import PrioritizedReplay, SumTree
from relayrl.replay.uniform import UniformReplay

__all__ = ["UniformReplay", "PrioritizedReplay", "SumTree"]
