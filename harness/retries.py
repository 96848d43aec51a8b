"""One retry policy for I/O that can fail transiently, built on tenacity.

Capped exponential backoff (``min(cap, base * 2**k)`` before the k-th retry, k from 0),
optionally scaled by 0.5-1.0 ("equal jitter") so parallel callers hitting one throttled
endpoint do not retry in lockstep, a total deadline and an optional attempt limit. No retry
starts whose sleep would end past the deadline.

The clock and the sleep are parameters, not tenacity's own ``time.monotonic``, so a test
drives a fake clock and a retry test takes no wall time. A retry that is given up raises
tenacity's ``RetryError`` (its ``last_attempt`` holds the attempt count and the last error);
an error the caller does not call transient is raised at once, unchanged. Callers turn both
into their own typed errors.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

import tenacity
from tenacity import RetryCallState, RetryError
from tenacity.stop import stop_base

from harness.errors import mask_secrets

__all__ = ["RetryError", "call_with_retries"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class _CappedExponential(tenacity.wait_exponential):
    """tenacity's capped exponential wait, times ``0.5 + 0.5 * jitter()`` when a jitter is given."""

    def __init__(self, base_s: float, cap_s: float, jitter: Callable[[], float] | None) -> None:
        super().__init__(multiplier=base_s, max=cap_s, exp_base=2)
        self.jitter = jitter

    def __call__(self, retry_state: RetryCallState) -> float:
        delay = float(super().__call__(retry_state))
        return delay if self.jitter is None else delay * (0.5 + 0.5 * self.jitter())


class _StopAtDeadline(stop_base):
    """Stop when the next sleep would end more than ``deadline_s`` after ``started`` on ``clock``.

    tenacity's own stop_before_delay reads time.monotonic and stops at equality; this one reads the
    injected clock and lets a sleep end exactly at the deadline, as the hand-written loops did.
    """

    def __init__(self, clock: Callable[[], float], started: float, deadline_s: float) -> None:
        self.clock = clock
        self.started = started
        self.deadline_s = deadline_s

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self.clock() - self.started + retry_state.upcoming_sleep > self.deadline_s


def _log_retry(what: str) -> Callable[[RetryCallState], None]:
    def before_sleep(retry_state: RetryCallState) -> None:
        error = retry_state.outcome.exception() if retry_state.outcome is not None else None
        # masked here, as the final error is by the CLI: an endpoint's password (http://me:PASSWORD@host) is in
        # ``what`` and in the library's error (botocore quotes the URL) of every warning, not only the last
        log.warning("%s", mask_secrets(f"{what}: attempt {retry_state.attempt_number} failed "
                                       f"({type(error).__name__}: {error}); retrying in "
                                       f"{retry_state.upcoming_sleep:.1f}s"))

    return before_sleep


def call_with_retries(
    call: Callable[[], T],
    *,
    is_transient: Callable[[BaseException], bool],
    what: str,
    deadline_s: float,
    base_s: float,
    cap_s: float,
    max_attempts: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    jitter: Callable[[], float] | None = random.random,
) -> T:
    """``call()``, retried while ``is_transient(error)`` until the deadline or ``max_attempts``.

    Raises ``RetryError`` when it gives up (``.last_attempt.attempt_number`` attempts were made,
    ``.last_attempt.exception()`` is the last error) and any non-transient error unchanged.
    """
    # The attempt limit is checked first so an exhausted count never reads the clock (as before).
    stop: stop_base = _StopAtDeadline(clock, clock(), deadline_s)
    if max_attempts is not None:
        stop = tenacity.stop_after_attempt(max_attempts) | stop
    retrying = tenacity.Retrying(
        # Only an Exception is ever retried: KeyboardInterrupt and SystemExit pass straight through.
        retry=tenacity.retry_if_exception(lambda e: isinstance(e, Exception) and is_transient(e)),
        wait=_CappedExponential(base_s, cap_s, jitter),
        stop=stop,
        sleep=lambda seconds: sleep(float(seconds)),
        before_sleep=_log_retry(what),
        reraise=False,
    )
    return retrying(call)
