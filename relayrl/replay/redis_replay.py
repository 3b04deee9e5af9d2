"""Uniform replay stored in a Redis server, so experience outlives the learner process: a new learner that
attaches to the same server and key prefix continues with every stored transition.

Layout (no pickle: raw numpy bytes plus a JSON header):
  {prefix}:block:{id}   hash  one add() call: field "meta" = JSON {column: [dtype, shape]}, field "col:<name>" = bytes
  {prefix}:blocks       list  "id:rows" per block, oldest first (FIFO eviction past the capacity)
  {prefix}:next_id      int   block id counter
Every write is one pipeline (a round trip costs ~114 us here); blocks are immutable, so sampled blocks are
cached in the process and fetched once.
"""
from __future__ import annotations

import collections
import json
from typing import Iterator

import numpy as np


def connect(address: str, password: str | None, db: int = 0):
    """A Redis client for "host:port", failing now with a clear message if the server is unreachable or
    refuses the password."""
    import redis

    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"redis address {address!r} is invalid: allowed: 'host:port', e.g. '127.0.0.1:6379'")
    client = redis.Redis(host=host, port=int(port), password=password, db=db, socket_connect_timeout=3)
    try:
        client.ping()
    except redis.AuthenticationError as exc:
        raise ConnectionError(f"Redis at {address} refused the password ({exc}); set redis_password to the "
                              f"server's requirepass") from None
    except redis.ResponseError as exc:
        raise ConnectionError(f"Redis at {address} refused the connection: {exc}") from None
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        raise ConnectionError(f"cannot reach Redis at {address}: {exc}") from None
    return client


class RedisReplay:
    def __init__(self, address: str, password: str | None, capacity: int, key_prefix: str = "relayrl",
                 seed: int | None = None, appendonly: bool | None = None, block_cache: int = 4096):
        self.client = connect(address, password)
        if appendonly is not None:  # AOF persistence: every write also goes to the append-only file
            self.client.config_set("appendonly", "yes" if appendonly else "no")
        self.capacity = capacity
        self.prefix = key_prefix
        self.rng = np.random.default_rng(seed)
        self._cache: collections.OrderedDict = collections.OrderedDict()
        self._cache_size = block_cache
        self._ids: list[int] = []
        self._rows: list[int] = []

    # ------------------------------------------------------------------ keys
    def _block_key(self, block_id: int) -> str:
        return f"{self.prefix}:block:{block_id}"

    @property
    def _index_key(self) -> str:
        return f"{self.prefix}:blocks"

    # ------------------------------------------------------------------ writing
    def add(self, batch: dict[str, np.ndarray]) -> None:
        rows = len(next(iter(batch.values())))
        if rows == 0:
            return
        block_id = int(self.client.incr(f"{self.prefix}:next_id"))
        meta = {k: [np.asarray(v).dtype.str, list(np.shape(v))] for k, v in batch.items()}
        fields = {"meta": json.dumps(meta), **{f"col:{k}": np.ascontiguousarray(v).tobytes() for k, v in batch.items()}}
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(self._block_key(block_id), mapping=fields)
        pipe.rpush(self._index_key, f"{block_id}:{rows}")
        pipe.execute()
        self._evict()

    def _evict(self) -> None:
        """Drop the oldest blocks while the stored rows exceed the capacity."""
        self._refresh_index()
        total = sum(self._rows)
        while self._ids and total - self._rows[0] >= self.capacity:
            pipe = self.client.pipeline(transaction=True)
            pipe.lpop(self._index_key)
            pipe.delete(self._block_key(self._ids[0]))
            pipe.execute()
            total -= self._rows[0]
            self._cache.pop(self._ids[0], None)
            self._ids.pop(0), self._rows.pop(0)

    # ------------------------------------------------------------------ reading
    def _refresh_index(self) -> None:
        entries = self.client.lrange(self._index_key, 0, -1)
        self._ids = [int(e.split(b":")[0]) for e in entries]
        self._rows = [int(e.split(b":")[1]) for e in entries]

    def __len__(self) -> int:
        self._refresh_index()
        return int(sum(self._rows))

    def _load_blocks(self, block_ids: list[int]) -> dict[int, dict[str, np.ndarray]]:
        missing = [b for b in block_ids if b not in self._cache]
        if missing:
            pipe = self.client.pipeline(transaction=False)
            for b in missing:
                pipe.hgetall(self._block_key(b))
            for b, raw in zip(missing, pipe.execute()):
                if not raw:
                    raise KeyError(f"replay block {b} vanished from Redis (evicted or deleted by another client)")
                meta = json.loads(raw[b"meta"])
                self._cache[b] = {k: np.frombuffer(raw[f"col:{k}".encode()], dtype=np.dtype(dt)).reshape(shape)
                                  for k, (dt, shape) in meta.items()}
                if len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return {b: self._cache[b] for b in block_ids}

    def sample(self, batch_size: int) -> dict[str, np.ndarray]:
        """Uniform over stored rows: positions drawn over the cumulative row counts of the blocks."""
        self._refresh_index()
        bounds = np.cumsum(self._rows)
        if not len(bounds) or bounds[-1] == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        positions = np.sort(self.rng.integers(0, bounds[-1], batch_size))  # sorted: rows grouped by block
        which = np.searchsorted(bounds, positions, side="right")
        offsets = positions - np.concatenate([[0], bounds[:-1]])[which]
        unique, starts = np.unique(which, return_index=True)
        blocks = self._load_blocks([self._ids[w] for w in unique])
        parts = collections.defaultdict(list)
        for w, lo, hi in zip(unique, starts, list(starts[1:]) + [len(which)]):
            for k, column in blocks[self._ids[w]].items():
                parts[k].append(column[offsets[lo:hi]])
        out = {k: np.concatenate(v) for k, v in parts.items()}
        out["indices"] = positions
        out["weights"] = np.ones(batch_size, np.float32)
        return out

    def update_priorities(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """The Redis backend is uniform."""

    def iterate(self) -> Iterator[dict[str, np.ndarray]]:
        """Every stored block, oldest first (for audits and checkpoints)."""
        self._refresh_index()
        for b in self._ids:
            yield self._load_blocks([b])[b]

    def checksum(self) -> tuple[int, str]:
        """(rows, sha256 over every block's columns in storage order): to prove nothing was lost."""
        import hashlib

        digest, rows = hashlib.sha256(), 0
        for block in self.iterate():
            for k in sorted(block):
                digest.update(k.encode())
                digest.update(np.ascontiguousarray(block[k]).tobytes())
            rows += len(next(iter(block.values())))
        return rows, digest.hexdigest()

    def clear(self) -> None:
        self._refresh_index()
        pipe = self.client.pipeline(transaction=True)
        for b in self._ids:
            pipe.delete(self._block_key(b))
        pipe.delete(self._index_key, f"{self.prefix}:next_id")
        pipe.execute()
        self._ids, self._rows = [], []
        self._cache.clear()
