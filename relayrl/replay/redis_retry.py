"""Redis operations retried whole until a deadline, and their failures as one line without the password.

Each replay operation (add, len, sample, ...) is repeated with redis-py's jittered exponential backoff through
dropped connections, timeouts and a server still loading its AOF, and gives up with `ReplayUnavailableError`
once it has failed for `deadline_s` or reaches `give_up_by` (the run's own end). A refused password or an
error reply is not transient: ReplayUnavailableError at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
BACKOFF_BASE_S, BACKOFF_CAP_S = 0.05, 1.0  # first retry after <= 0.1 s, then doubling up to 1 s


class ReplayUnavailableError(RuntimeError):
    """Redis stopped answering (or refused) during the run for longer than allowed; the message is one
    line that names the server's address, never its password."""


def masked(error: BaseException, password: str | None) -> str:
    """`Type: message` on one line with the password (should a library ever echo it) replaced by ***."""
    text = " ".join(f"{type(error).__name__}: {error}".split())
    return text.replace(password, "***") if password else text


def whole_operation_retry() -> Any:
    """A redis-py Retry of the transient errors with jittered backoff and no count of its own:
    call_with_deadline's failure callback ends it."""
    import redis
    from redis.backoff import ExponentialWithJitterBackoff
    from redis.retry import Retry

    transient = (redis.ConnectionError, redis.TimeoutError)  # also BusyLoadingError: AOF still loading
    return Retry(ExponentialWithJitterBackoff(cap=BACKOFF_CAP_S, base=BACKOFF_BASE_S), -1, transient)


def call_with_deadline(
    operation: Callable[[], T],
    retry: Any,
    address: str,
    password: str | None,
    deadline_s: float,
    give_up_by: float | None,
) -> T:
    """operation(), repeated by `retry` through transient errors until it has failed for deadline_s or the
    run's end (give_up_by, time.monotonic()) has passed; then ReplayUnavailableError. A refused password or
    an error reply is not transient: ReplayUnavailableError at once."""
    import redis
    from redis.exceptions import AuthenticationError, AuthorizationError

    refused = (AuthenticationError, AuthorizationError)  # ConnectionErrors, but not transient
    started = time.monotonic()
    give_up_at = started + deadline_s
    why = f"redis_deadline_s = {deadline_s} s"
    if give_up_by is not None and give_up_by < give_up_at:
        give_up_at, why = give_up_by, "the run's deadline (--stop-time)"

    def give_up_when_late(error: Exception) -> None:
        if time.monotonic() >= give_up_at:
            raise ReplayUnavailableError(
                f"Redis at {address} failed for {time.monotonic() - started:.1f} s, past {why}: "
                f"{masked(error, password)}; the replay already written stays in Redis"
            ) from None

    try:
        return retry.call_with_retry(
            operation, give_up_when_late, is_retryable=lambda e: not isinstance(e, refused)
        )
    except redis.RedisError as exc:
        raise ReplayUnavailableError(
            f"Redis at {address} refused a replay operation: {masked(exc, password)}"
        ) from None
