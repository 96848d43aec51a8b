"""fusion_window(size) = max(100, min(size*4, 500))."""

from __future__ import annotations

import pytest

from harness.errors import UsageError
from harness.retrieval.window import fusion_window


@pytest.mark.parametrize(
    ("size", "window"),
    [
        (1, 100),  # 4 -> floor 100
        (12, 100),  # 48 -> 100: the methodology's --size 12
        (25, 100),  # 100 exactly
        (26, 104),  # first size above the floor
        (48, 192),  # the methodology's --size 48
        (124, 496),
        (125, 500),  # ceiling reached
        (126, 500),  # 504 -> 500
        (10_000, 500),
    ],
)
def test_fusion_window(size: int, window: int) -> None:
    assert fusion_window(size) == window


@pytest.mark.parametrize("size", [0, -1, True, 2.5, "48"])
def test_size_must_be_a_positive_integer(size: object) -> None:
    with pytest.raises(UsageError, match="--size"):
        fusion_window(size)  # type: ignore[arg-type]
