"""Seed derivation: every random choice comes from a ``random.Random`` seeded here.

Sub-seeds are sha256 over the corpus seed and a path of labels, never ``hash()``
(randomised per process by PYTHONHASHSEED), so the same seed gives the same bytes in any
process on any machine. ``random.Random(int)`` and its integer methods (``randrange``,
``choice``, ``sample``, ``shuffle``) are stable across CPython 3.x for a fixed seed.
"""

from __future__ import annotations

import hashlib
import random


def derive_seed(seed: int, *labels: str | int) -> int:
    """A 64-bit sub-seed for ``labels`` under ``seed``."""
    material = "\x1f".join([str(seed), *(str(label) for label in labels)])
    return int.from_bytes(hashlib.sha256(material.encode("utf-8")).digest()[:8], "big")


def rng_for(seed: int, *labels: str | int) -> random.Random:
    """An independent generator for one labelled part of the corpus."""
    return random.Random(derive_seed(seed, *labels))
