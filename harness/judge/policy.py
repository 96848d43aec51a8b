"""The relevance policy: coverage -> graded relevance. Written into every results file."""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import UsageError


@dataclass(frozen=True)
class RelevancePolicy:
    """Grade 2 at coverage >= high, 1 above low, else 0; binary collapses 2 onto 1."""

    high: float = 0.5
    low: float = 0.0
    binary: bool = False

    def __post_init__(self) -> None:
        if not (0.0 <= self.low < self.high <= 1.0):
            raise UsageError(
                f"relevance thresholds need 0 <= low < high <= 1 (got low={self.low}, high={self.high})"
            )

    def grade(self, coverage: float) -> int:
        if coverage <= self.low:
            return 0
        if self.binary:
            return 1
        return 2 if coverage >= self.high else 1

    def to_dict(self) -> dict[str, object]:
        return {
            "name": "binary by gold word-share" if self.binary else "graded by gold word-share",
            "high": self.high,
            "low": self.low,
            "binary": self.binary,
            "grades": {"1": f"coverage > {self.low}", "2": None if self.binary else f"coverage >= {self.high}"},
            "attribution": "time overlap restricted to the chunk's own speaker",
            "spans": "unioned per file before grading",
        }
