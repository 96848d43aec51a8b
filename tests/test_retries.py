"""harness.retries: the one retry policy (tenacity driven by an injected clock and sleep)."""

from __future__ import annotations

import logging

import pytest
from fakes import Clock

from harness.retries import RetryError, call_with_retries


class Transient(Exception):
    pass


def _failing(times: int, error: BaseException | None = None):
    calls = {"n": 0}

    def call() -> str:
        calls["n"] += 1
        if calls["n"] <= times:
            raise error if error is not None else Transient(f"try {calls['n']}")
        return "ok"

    return call, calls


def _retry(call, clock: Clock, **kwargs):
    options = {"is_transient": lambda e: isinstance(e, Transient), "what": "get k", "deadline_s": 100.0,
               "base_s": 1.0, "cap_s": 8.0, "sleep": clock.sleep, "clock": clock, "jitter": None}
    return call_with_retries(call, **{**options, **kwargs})


def test_equal_jitter_scales_each_delay_by_half_to_one() -> None:
    clock = Clock()
    draws = iter([0.0, 1.0, 0.5])
    call, _ = _failing(3)
    assert _retry(call, clock, jitter=lambda: next(draws)) == "ok"
    assert clock.sleeps == [0.5, 2.0, 3.0]  # 1 x 0.5, 2 x 1.0, 4 x 0.75


def test_attempt_limit_gives_up_with_the_last_error() -> None:
    clock = Clock()
    call, calls = _failing(99)
    with pytest.raises(RetryError) as gave_up:
        _retry(call, clock, max_attempts=3)
    assert calls["n"] == 3
    assert gave_up.value.last_attempt.attempt_number == 3
    assert str(gave_up.value.last_attempt.exception()) == "try 3"
    assert clock.sleeps == [1.0, 2.0]


def test_a_sleep_may_end_exactly_at_the_deadline_but_not_past_it() -> None:
    clock = Clock()
    call, calls = _failing(99)
    with pytest.raises(RetryError):
        _retry(call, clock, deadline_s=7.0)  # 1 + 2 + 4 = 7 ends on the deadline; the next 8 s would not
    assert clock.sleeps == [1.0, 2.0, 4.0]
    assert calls["n"] == 4


@pytest.mark.parametrize("error", [ValueError("bug"), KeyboardInterrupt()])
def test_what_is_not_transient_is_raised_at_once(error: BaseException) -> None:
    clock = Clock()
    call, calls = _failing(99, error)
    with pytest.raises(type(error)):
        # the predicate calls KeyboardInterrupt transient: it still must not be retried
        _retry(call, clock, is_transient=lambda e: not isinstance(e, ValueError))
    assert calls["n"] == 1
    assert clock.sleeps == []


def test_each_retry_is_logged_as_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    call, _ = _failing(1)
    with caplog.at_level(logging.WARNING, logger="harness.retries"):
        _retry(call, clock)
    assert [r.getMessage() for r in caplog.records] == [
        "get k: attempt 1 failed (Transient: try 1); retrying in 1.0s"]


def test_every_retry_warning_masks_a_password_in_what_and_in_the_error(caplog: pytest.LogCaptureFixture) -> None:
    """An S3 endpoint's password is in ``what`` (the store's name) and in botocore's error (it quotes the URL):
    each warning is masked as the final error line is, not only the last."""
    clock = Clock()
    url = "http://user:s3cr3t@127.0.0.1:9/b/k"
    call, _ = _failing(3, Transient(f'Could not connect to the endpoint URL: "{url}"'))
    with caplog.at_level(logging.WARNING, logger="harness.retries"):
        _retry(call, clock, what="s3://b at http://user:s3cr3t@127.0.0.1:9: get k")
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 3
    assert messages[0] == ('s3://b at http://user:***@127.0.0.1:9: get k: attempt 1 failed (Transient: Could not '
                           'connect to the endpoint URL: "http://user:***@127.0.0.1:9/b/k"); retrying in 1.0s')
    assert not any("s3cr3t" in m for m in messages)
