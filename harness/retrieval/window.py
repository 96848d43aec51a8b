"""The fusion window: how deep each leg is fetched before the two are fused.

The chat path fuses over ``max(100, min(size * 4, 500))`` candidates per leg, so the
request size sets the depth the legs are fused over and a different ``--size`` is a
different ranking, not a truncation of the same one (methodology, "--size is not a
truncation knob").
"""

from __future__ import annotations

from harness.errors import UsageError

FUSION_WINDOW_FLOOR = 100
FUSION_WINDOW_CEILING = 500
FUSION_WINDOW_FACTOR = 4


def fusion_window(size: int) -> int:
    """Depth of each leg for a request of ``size`` results: ``max(100, min(size*4, 500))``."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise UsageError(f"--size must be a positive integer, got {size!r}; pass --size 1 or more")
    return max(FUSION_WINDOW_FLOOR, min(size * FUSION_WINDOW_FACTOR, FUSION_WINDOW_CEILING))
