"""Uniform replay stored in a Redis server, so experience outlives the learner process: a new learner that
attaches to the same server and key prefix continues with every stored transition.

Layout (no pickle: raw numpy bytes plus a JSON header):
  {prefix}:block:{id}   hash  one add() call: field "meta" = JSON {column: [dtype, shape]},
                              field "col:<name>" = bytes
  {prefix}:blocks       list  "id:rows" per block, oldest first (FIFO eviction past the capacity)
  {prefix}:next_id      int   block id counter
A batch of compact rows (sampling/frame_rows.py: stacked frames, each once) is one block with its frames and
frame references; sampled stacks are rebuilt from the block. Blocks share no frames (each is self-contained
and evicted whole), so a block costs one first stack per env stream more than the in-memory replay.
Every write is one round trip (~114 us here: a server-side script); blocks are immutable, so sampled blocks
are cached in the process and fetched once.

Redis is a dependency that can fail. Every socket wait is bounded by `timeout_s`; each replay operation (add,
len, sample, ...) is retried whole (redis_retry.py), with redis-py's jittered exponential backoff, through
dropped connections, timeouts and a server still loading its AOF, and gives up with `ReplayUnavailableError`
once it has failed for `deadline_s` or reaches `give_up_by` (the run's own end, set by the CLI's
--stop-time): at the latest deadline + timeout_s + 1 s after it began. Operations are safe to repeat (a write
whose reply was lost is not applied twice). Nothing is deleted on failure: what was written stays in Redis
(and in its AOF when appendonly is on). At start-up an unusable server (bad address, unreachable, wrong
password) raises `RedisStartError`, a ValueError: bad input. No message ever holds the password.
"""

from __future__ import annotations

import collections
import json
import re
from collections.abc import Callable, Iterator
from typing import TypeVar

import numpy as np

from relayrl.replay.redis_retry import call_with_deadline, masked, whole_operation_retry
from relayrl.sampling import frame_rows

T = TypeVar("T")
WRITE_BLOCK = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('RPUSH', KEYS[2], ARGV[1])
return 1
"""  # KEYS: block, index; ARGV: "id:rows", then field, value, field, value, ...


class RedisStartError(ValueError):
    """The configured Redis cannot be used at start-up: bad address, unreachable, refuses the password."""


_HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+):([0-9]{1,5})")


def parse_address(address: str, field: str = "redis_address") -> tuple[str, int]:
    """'host:port' (or '[v6]:port') -> (host, port); ValueError naming the field otherwise."""
    match = _HOST_PORT.fullmatch(address) if isinstance(address, str) else None
    if match is None or not 0 < int(match.group(2)) < 65536:
        raise ValueError(
            f"{field} = {address!r} is invalid: allowed: 'host:port' with a port in 1..65535, "
            f"e.g. '127.0.0.1:6379'"
        )
    return match.group(1).strip("[]"), int(match.group(2))


def connect(address: str, password: str | None, db: int = 0, timeout_s: float = 5.0):
    """A Redis client for "host:port" whose every socket wait ends after timeout_s; raises RedisStartError now
    if the server is unreachable, silent or refuses the password. The client itself never retries:
    RedisReplay retries whole operations, which it can make safe to repeat (a pipeline retried inside
    redis-py after a lost reply would run twice)."""
    from relayrl.extras import require

    redis = require("redis", "replay_backend = 'redis'")
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    host, port = parse_address(address)
    client = redis.Redis(
        host=host,
        port=port,
        password=password,
        db=db,
        socket_connect_timeout=timeout_s,
        socket_timeout=timeout_s,
        socket_keepalive=True,
        retry=Retry(NoBackoff(), 0),
    )
    try:
        client.ping()
    except redis.AuthenticationError:
        raise RedisStartError(
            f"Redis at {address} refused the password: set redis_password or "
            f"RELAYRL_REDIS_PASSWORD to the server's requirepass"
        ) from None
    except redis.TimeoutError:  # e.g. a frozen server: the kernel accepts the connection, nothing answers
        raise RedisStartError(
            f"Redis at {address} did not answer in {timeout_s} s (redis_timeout_s)"
        ) from None
    except redis.RedisError as exc:
        raise RedisStartError(f"cannot use Redis at {address}: {masked(exc, password)}") from None
    return client


class RedisReplay:
    def __init__(
        self,
        address: str,
        password: str | None,
        capacity: int,
        key_prefix: str = "relayrl",
        seed: int | None = None,
        appendonly: bool | None = None,
        block_cache: int = 4096,
        timeout_s: float = 5.0,
        deadline_s: float = 30.0,
    ):
        from relayrl.extras import require

        redis = require("redis", "replay_backend = 'redis'")
        self.address, self._password = address, password
        self.client = connect(address, password, timeout_s=timeout_s)
        self.deadline_s = deadline_s
        self.give_up_by: float | None = None  # time.monotonic() of the run's end (DQN.set_deadline)
        self._retry = whole_operation_retry()
        if appendonly is not None:  # AOF persistence: every write also goes to the append-only file
            try:
                self.client.config_set("appendonly", "yes" if appendonly else "no")
            except redis.RedisError as exc:
                raise RedisStartError(
                    f"Redis at {address} refused redis_appendonly = {appendonly} "
                    f"(CONFIG SET appendonly): {masked(exc, password)}"
                ) from None
        self._write_block = self.client.register_script(WRITE_BLOCK)
        self.capacity = capacity
        self.prefix = key_prefix
        self.rng = np.random.default_rng(seed)
        self._cache: collections.OrderedDict = collections.OrderedDict()
        self._cache_size = block_cache
        self._ids: list[int] = []
        self._rows: list[int] = []

    # ------------------------------------------------------------------ failures
    def _call(self, operation: Callable[[], T]) -> T:
        """operation(), retried whole until redis_deadline_s or give_up_by (redis_retry.py)."""
        return call_with_deadline(
            operation, self._retry, self.address, self._password, self.deadline_s, self.give_up_by
        )

    # ------------------------------------------------------------------ keys
    def _block_key(self, block_id: int) -> str:
        return f"{self.prefix}:block:{block_id}"

    @property
    def _index_key(self) -> str:
        return f"{self.prefix}:blocks"

    # ------------------------------------------------------------------ writing
    def add(self, batch: dict[str, np.ndarray]) -> None:
        rows = frame_rows.row_count(batch)
        if rows == 0:
            return
        block_id = self._call(lambda: int(self.client.incr(f"{self.prefix}:next_id")))  # a retry skips an id
        meta = {k: [np.asarray(v).dtype.str, list(np.shape(v))] for k, v in batch.items()}
        fields = {
            "meta": json.dumps(meta),
            **{f"col:{k}": np.ascontiguousarray(v).tobytes() for k, v in batch.items()},
        }
        # one server-side script: applied at most once even when a request whose reply was lost is delivered
        # late by a stalled server after its retry (a client-side "exists?" check could race with it)
        args = [f"{block_id}:{rows}", *[x for item in fields.items() for x in item]]
        self._call(lambda: self._write_block(keys=[self._block_key(block_id), self._index_key], args=args))
        self._call(self._evict)

    def _evict(self) -> None:
        """Drop the oldest blocks while the stored rows exceed the capacity (safe to repeat: it removes the
        named index entry, not "the first one")."""
        self._refresh_index_once()
        total = sum(self._rows)
        while self._ids and total - self._rows[0] >= self.capacity:
            pipe = self.client.pipeline(transaction=True)
            pipe.lrem(self._index_key, 1, f"{self._ids[0]}:{self._rows[0]}")
            pipe.delete(self._block_key(self._ids[0]))
            pipe.execute()
            total -= self._rows[0]
            self._cache.pop(self._ids[0], None)
            self._ids.pop(0), self._rows.pop(0)

    # ------------------------------------------------------------------ reading
    def _refresh_index_once(self) -> None:
        entries = self.client.lrange(self._index_key, 0, -1)
        self._ids = [int(e.split(b":")[0]) for e in entries]
        self._rows = [int(e.split(b":")[1]) for e in entries]

    def _refresh_index(self) -> None:
        self._call(self._refresh_index_once)

    def __len__(self) -> int:
        self._refresh_index()
        return int(sum(self._rows))

    def _load_blocks(self, block_ids: list[int]) -> dict[int, dict[str, np.ndarray]]:
        missing = [b for b in block_ids if b not in self._cache]
        if missing:

            def fetch() -> list:
                pipe = self.client.pipeline(transaction=False)
                for b in missing:
                    pipe.hgetall(self._block_key(b))
                return pipe.execute()

            for b, raw in zip(missing, self._call(fetch)):
                if not raw:
                    raise KeyError(
                        f"replay block {b} vanished from Redis (evicted or deleted by another client)"
                    )
                meta = json.loads(raw[b"meta"])
                self._cache[b] = {
                    k: np.frombuffer(raw[f"col:{k}".encode()], dtype=np.dtype(dt)).reshape(shape)
                    for k, (dt, shape) in meta.items()
                }
                if frame_rows.is_compact(self._cache[b]):  # written by anyone who can reach the server
                    frame_rows.check_refs(self._cache[b], f"replay block {b} in Redis")
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
            block = blocks[self._ids[w]]
            rows = {k: v[offsets[lo:hi]] for k, v in block.items() if k not in frame_rows.FRAME_COLUMNS}
            if frame_rows.is_compact(block):  # a block holds its frames once: rebuild the sampled stacks
                rows = frame_rows.expand({**rows, "frames": block["frames"]})
            for k, column in rows.items():
                parts[k].append(column)
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
            rows += frame_rows.row_count(block)
        return rows, digest.hexdigest()

    def clear(self) -> None:
        def drop() -> None:
            self._refresh_index_once()
            pipe = self.client.pipeline(transaction=True)
            for b in self._ids:
                pipe.delete(self._block_key(b))
            pipe.delete(self._index_key, f"{self.prefix}:next_id")
            pipe.execute()

        self._call(drop)
        self._ids, self._rows = [], []
        self._cache.clear()
