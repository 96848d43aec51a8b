"""Diversity sampling: what reaches the prompt after rerank.

The algorithm, exactly:

1. Group the hits by file, files ordered by the position of their first hit, each file's
   hits kept in the order they were given (rerank's order).
2. Round ``r`` (``r = 0, 1, ...``, at most ``max_chunks_per_file`` rounds) walks the files
   in that order and takes each file's ``r``-th hit, skipping files that have none left.
3. Stop as soon as ``final_chunks`` hits have been taken, or when a round takes nothing.

The output is therefore one fixed sequence cut at ``final_chunks``, so it is
prefix-invariant in ``final_chunks`` (the list for 8 is the first 8 of the list for 12).
Because rounds only append, the uncut sequence for ``max_chunks_per_file = m`` is also a
prefix of the one for ``m + 1``. Each input position is taken at most once, so nothing is
invented or duplicated. The list is the prompt's order: never re-sort it by score
(methodology, "A fourth way this harness measured the wrong thing").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from harness.errors import UsageError


class HasFileUuid(Protocol):
    """Anything that names the file it came from (a ``RankedDoc``, a search hit)."""

    @property
    def file_uuid(self) -> str: ...


# A hit is an object with ``file_uuid``, or a ``(doc_id, file_uuid)`` pair.
Hit = TypeVar("Hit", bound=HasFileUuid | tuple[str, str])


def file_of(hit: HasFileUuid | tuple[str, str]) -> str:
    """The file a hit belongs to: its ``file_uuid`` attribute, else item 1 of a pair."""
    file_uuid = getattr(hit, "file_uuid", None)
    if isinstance(file_uuid, str):
        return file_uuid
    if isinstance(hit, tuple) and len(hit) == 2 and isinstance(hit[1], str):
        return hit[1]
    raise TypeError(f"a hit needs a str file_uuid attribute or be a (doc_id, file_uuid) pair, got {hit!r}")


def _check_cap(value: int, flag: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise UsageError(f"{flag} must be an integer >= {minimum}, got {value!r}")


def diversity_sample(hits: Sequence[Hit], final_chunks: int, max_chunks_per_file: int) -> list[Hit]:
    """Round-robin over files in first-appearance order; see the module docstring.

    Returns a new list; ``hits`` is not modified.
    """
    _check_cap(final_chunks, "--final-chunks", 0)
    _check_cap(max_chunks_per_file, "--max-chunks-per-file", 1)
    by_file: dict[str, list[Hit]] = {}
    for hit in hits:
        by_file.setdefault(file_of(hit), []).append(hit)

    sampled: list[Hit] = []
    if final_chunks == 0:
        return sampled
    for round_index in range(max_chunks_per_file):
        took_any = False
        for file_hits in by_file.values():
            if round_index < len(file_hits):
                sampled.append(file_hits[round_index])
                took_any = True
                if len(sampled) == final_chunks:
                    return sampled
        if not took_any:
            break
    return sampled
