"""Test doubles shared by several test files (imported as ``fakes``: pytest puts tests/ on sys.path)."""

from __future__ import annotations


class Clock:
    """A clock that only moves when something sleeps: ``sleep`` records and advances, ``time()`` and
    calling it read the time (retry loops take either shape)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def time(self) -> float:
        return self.now

    def __call__(self) -> float:
        return self.now
