"""Sharded replay on Ray: N shard actors, each a (prioritised) numpy replay buffer, filled through local
caches that upload in batches (a replay actor call costs ~0.7 ms here, so rows travel 1,000 at a time),
sampled from all shards in parallel by the learner, which sends priorities back without waiting.

    replay = ShardedReplay(num_shards=2, capacity=100_000, prioritized=True)
    cache = ReplayCache(replay.shards[i], flush_rows=1000)      # on a worker: cache.add(rows, priorities)
    batch = replay.sample(512, beta=0.4)                          # columns + "indices" + "weights" + "shard"
    replay.update_priorities(batch["shard"], batch["indices"], td_errors)   # asynchronous
(Ape-X's workers, which feed their shards directly, are in apex_workers.py.)

Nothing is lost when a shard dies: every upload carries (source, sequence number), the shard records the last
sequence it applied per source (and that record travels in its snapshot), and each cache keeps its uploads
until a snapshot confirms them. A shard restored from its snapshot is sent exactly the uploads after it.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any

import numpy as np
import ray

from relayrl.replay import PrioritizedReplay, UniformReplay
from relayrl.runtime.cluster import kill_quietly, remote_class, spread_over_nodes
from relayrl.sampling import frame_rows

SHARD_LOST = (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError)  # an answer lost with its node


class ReplayShard:
    """Actor body: one shard of the replay buffer."""

    def __init__(self, capacity: int, prioritized: bool, alpha: float, seed: int | None):
        self.buffer = (
            PrioritizedReplay(capacity, alpha, seed=seed)
            if prioritized
            else UniformReplay(capacity, seed=seed)
        )
        self.applied: dict[int, int] = {}  # source -> last upload sequence number stored

    def add(self, batch: dict, priorities: np.ndarray | None = None, source: int = -1, seq: int = -1) -> int:
        if source >= 0:
            if seq <= self.applied.get(source, -1):  # a resend this shard already holds
                return len(self.buffer)
            self.applied[source] = seq
        if priorities is not None and isinstance(self.buffer, PrioritizedReplay):
            self.buffer.add(batch, priorities)
        else:
            self.buffer.add(batch)
        return len(self.buffer)

    def applied_seq(self, source: int) -> int:
        return self.applied.get(source, -1)

    def sample(self, n: int, beta: float | None = None) -> dict:
        if isinstance(self.buffer, PrioritizedReplay):
            return self.buffer.sample(n, beta)
        return self.buffer.sample(n)

    def update_priorities(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        self.buffer.update_priorities(indices, priorities)

    def size(self) -> int:
        return len(self.buffer)

    def stats(self) -> dict:
        return {"size": len(self.buffer), "added_total": self.buffer.added_total}

    def state(self) -> dict:
        out = self.buffer.state()
        out["applied"] = np.array(sorted(self.applied.items()), np.int64).reshape(-1, 2)
        return out

    def load_state(self, state: dict) -> int:
        self.buffer.load_state({k: v for k, v in state.items() if k != "applied"})
        self.applied = {int(src): int(seq) for src, seq in state.get("applied", np.zeros((0, 2), np.int64))}
        return len(self.buffer)


class ReplayCache:
    """Worker-side buffer of rows (and initial priorities) sent to one shard once `flush_rows` accumulate.
    Uploads are numbered and kept until the driver confirms a shard snapshot holds them (`confirm`), so a
    shard restored from its snapshot gets exactly the uploads it lacks (`retarget`). At most `keep_rows`
    unconfirmed rows are kept (the shard's capacity: older rows would be overwritten there anyway)."""

    def __init__(self, shard, flush_rows: int = 1000, source: int = -1, keep_rows: int | None = None):
        self.shard, self.flush_rows, self.source, self.keep_rows = shard, flush_rows, source, keep_rows
        self._rows: list[dict] = []
        self._priorities: list[np.ndarray] = []
        self._count = 0
        self._pending: list = []  # in-flight upload refs; bounded so a slow shard applies back-pressure
        self._unconfirmed: deque = deque()  # (seq, rows, batch, priorities) not yet in a shard snapshot
        self._unconfirmed_rows = 0
        # a restarted worker reuses its source id: continue the numbering the shard already holds
        self.seq = ray.get(shard.applied_seq.remote(source)) if source >= 0 else -1
        self.rows_uploaded = 0
        self.rows_dropped = 0  # unconfirmed rows beyond keep_rows (lost if the shard dies before a snapshot)

    def add(self, batch: dict, priorities: np.ndarray | None = None) -> None:
        self._rows.append(batch)
        if priorities is not None:
            self._priorities.append(np.asarray(priorities))
        self._count += frame_rows.row_count(batch)
        if self._count >= self.flush_rows:
            self.flush()

    def flush(self) -> None:
        if not self._rows:
            return
        batch = frame_rows.concat(self._rows)  # compact rows: frame references shifted to the joint frames
        priorities = np.concatenate(self._priorities) if self._priorities else None
        self.seq += 1
        self._pending.append(self.shard.add.remote(batch, priorities, self.source, self.seq))
        self._unconfirmed.append((self.seq, self._count, batch, priorities))
        self._unconfirmed_rows += self._count
        self.rows_uploaded += self._count
        self._rows, self._priorities, self._count = [], [], 0
        while (
            self.keep_rows is not None and self._unconfirmed_rows - self._unconfirmed[0][1] >= self.keep_rows
        ):
            dropped = self._unconfirmed.popleft()[1]
            self._unconfirmed_rows -= dropped
            self.rows_dropped += dropped
        while len(self._pending) > 2:
            try:
                ray.get(self._pending.pop(0))
            except ray.exceptions.RayActorError:  # the shard died: its replacement gets the rows on retarget
                pass

    def wait(self) -> int:
        """Send the partial block and wait for every upload; the rows uploaded so far."""
        self.flush()
        for ref in self._pending:
            try:
                ray.get(ref)
            except ray.exceptions.RayActorError:
                pass
        self._pending = []
        return self.rows_uploaded

    def confirm(self, seq: int) -> None:
        """A shard snapshot holds every upload up to `seq`: forget them."""
        while self._unconfirmed and self._unconfirmed[0][0] <= seq:
            self._unconfirmed_rows -= self._unconfirmed.popleft()[1]

    def retarget(self, shard) -> None:
        """Point at a restored shard and resend every upload its snapshot does not hold."""
        self.shard, self._pending = shard, []
        applied = ray.get(shard.applied_seq.remote(self.source))
        for seq, _, batch, priorities in self._unconfirmed:
            if seq > applied:
                self._pending.append(shard.add.remote(batch, priorities, self.source, seq))


class ShardedReplay:
    """Shard actors plus the driver's last snapshot of each: a shard that dies is re-created from its
    snapshot, and the workers' caches resend the uploads after it (see ReplayCache.retarget)."""

    def __init__(
        self,
        num_shards: int,
        capacity: int,
        prioritized: bool = False,
        alpha: float = 0.6,
        seed: int | None = None,
    ):
        # Idle memory: no CPU reserved, spread over the nodes (cluster.spread_over_nodes). A restored shard
        # goes where SPREAD puts it (which nodes are lost is not known yet), or in a Tune placement group.
        actor = remote_class(ReplayShard)
        args = (max(1, capacity // num_shards), prioritized, alpha)
        again = None if ray.util.get_current_placement_group() is not None else "SPREAD"
        self._make = lambda i, where=again: actor.options(num_cpus=0, scheduling_strategy=where).remote(
            *args, None if seed is None else seed + i
        )
        self.shards = [self._make(i, where) for i, where in enumerate(spread_over_nodes(num_shards))]
        self.prioritized = prioritized
        self.snapshots: list[dict | None] = [None] * num_shards
        self.restarts = 0
        self.on_restore = None  # callback(shard_index, new_shard): re-attach the workers that fed it
        self.rng = np.random.default_rng(seed)  # interleaves the shards' rows (checkpointed as replay_rng)
        self._filled = False  # every shard held a learner batch once (sizes only grow)
        self._next_shard = -1  # the shard the last compact batch went to

    def snapshot(self) -> dict[int, int]:
        """Copy every shard's arrays to the driver (kept in memory; a checkpoint may write them out).
        Returns source -> last upload sequence the snapshots hold, for the caches to forget."""
        confirmed: dict[int, int] = {}
        for i, state in enumerate(self._on_every_shard("state")):
            self.snapshots[i] = state
            confirmed.update({int(src): int(seq) for src, seq in state["applied"]})
        return confirmed

    def restore_shard(self, i: int, attempts: int = 5) -> None:
        """Re-create shard i from its last snapshot. A new shard that dies too (placed on a node that is
        lost but not yet known to be: Ray learns of a dead node within seconds) is re-created again."""
        logging.getLogger("relayrl").warning("replay shard %d died; restoring it from its last snapshot", i)
        for attempt in range(attempts):
            kill_quietly(self.shards[i])
            self.shards[i] = self._make(i)
            try:
                snapshot, shard = self.snapshots[i], self.shards[i]
                ray.get(shard.load_state.remote(snapshot) if snapshot is not None else shard.size.remote())
                break
            except ray.exceptions.RayActorError:
                if attempt == attempts - 1:
                    raise
                time.sleep(2**attempt)
        self.restarts += 1
        if self.on_restore is not None:
            self.on_restore(i, self.shards[i])

    def ensure_alive(self, i: int) -> bool:
        """Restore shard i from its snapshot if it died; True if it was restored (its workers re-attached)."""
        try:
            ray.get(self.shards[i].size.remote())
            return False
        except ray.exceptions.RayActorError:
            self.restore_shard(i)
            return True

    def _on_every_shard(self, method: str, *args: Any) -> list:
        """Call `method` on every shard and wait; a shard that died is restored and asked again."""
        refs = [getattr(shard, method).remote(*args) for shard in self.shards]
        out = []
        for i, ref in enumerate(refs):
            try:
                out.append(ray.get(ref))
            except SHARD_LOST:
                self.ensure_alive(i)
                out.append(ray.get(getattr(self.shards[i], method).remote(*args)))
        return out

    def load(self, parts: list[dict]) -> None:
        """Load each shard's part of a checkpoint (an empty part leaves that shard as it is)."""
        refs = []
        for i, (shard, part) in enumerate(zip(self.shards, parts)):
            if part:
                self.snapshots[i] = part
                refs.append(shard.load_state.remote(part))
        ray.get(refs)

    def add(self, batch: dict) -> None:
        """Driver-side add: rows dealt round-robin in contiguous blocks, one call per shard; a batch of
        compact rows (each frame once) goes whole to the next shard in turn, since its rows share frames."""
        if frame_rows.is_compact(batch):
            self._next_shard = (self._next_shard + 1) % len(self.shards)
            self.shards[self._next_shard].add.remote(batch)
            return
        n = len(next(iter(batch.values())))
        for i, rows in enumerate(np.array_split(np.arange(n), len(self.shards))):
            if len(rows):
                self.shards[i].add.remote({k: v[rows] for k, v in batch.items()})

    def size(self) -> int:
        return int(sum(self._on_every_shard("size")))

    def all_shards_filled(self, min_rows: int = 1) -> bool:
        """True once every shard holds min_rows (sampling asks every shard for its share)."""
        if not self._filled:
            self._filled = all(n >= min_rows for n in self._on_every_shard("size"))
        return self._filled

    def sample_async(self, n: int, beta: float | None = None) -> list:
        """Ask every non-empty shard for its share of n rows; resolve with `gather`."""
        share = int(np.ceil(n / len(self.shards)))
        self._last_request = (share, beta)
        return [s.sample.remote(share, beta) for s in self.shards]

    def gather(self, refs: list, n: int) -> dict:
        parts = []
        for i, ref in enumerate(refs):
            try:
                parts.append(ray.get(ref))
            except SHARD_LOST:
                self.ensure_alive(i)
                parts.append(ray.get(self.shards[i].sample.remote(*self._last_request)))
        # interleave the shards' rows: the learner cuts this sample into minibatches, and each shard is fed
        # by its own workers (their own epsilons), so unshuffled minibatches would each see one worker's data
        order = self.rng.permutation(sum(len(p["indices"]) for p in parts))[:n]
        out = {k: np.concatenate([p[k] for p in parts])[order] for k in parts[0]}
        out["shard"] = np.concatenate([np.full(len(p["indices"]), i) for i, p in enumerate(parts)])[order]
        return out

    def sample(self, n: int, beta: float | None = None) -> dict:
        return self.gather(self.sample_async(n, beta), n)

    def update_priorities(self, shard: np.ndarray, indices: np.ndarray, priorities: np.ndarray) -> None:
        """Fire and forget: the learner never waits for priority updates."""
        for i, actor in enumerate(self.shards):
            mask = shard == i
            if mask.any():
                actor.update_priorities.remote(indices[mask], priorities[mask])

    def stop(self) -> None:
        for actor in self.shards:
            ray.kill(actor)
        self.shards = []
