"""The near-duplicate rate: how much of a corpus is one meeting written twice.

Definition (docs/synthetic.md): a meeting's shingles are the set of its word 5-grams, over
its turns' text in order, tokenised like the BM25 self-report (casefolded runs of letters
and digits). Two meetings are near-duplicates when the Jaccard similarity of their
shingle sets is at least 0.5. The *near-duplicate rate* is the share of meetings that have
at least one near-duplicate among the other meetings.

Exact, not estimated, and fast. Jaccard >= t means overlap >= t/(1+t) (|a| + |b|). The
overlap on *rare* shingles (the rarest ones, up to a fixed budget of sum(df^2), so the
sparse product stays cheap) is counted exactly for every pair; the *frequent* shingles
can add at most min(F_a, F_b) more. Only pairs whose bound reaches the threshold are
compared, each exactly. (Prefix filtering does not prune here: template filler makes
nine in ten shingles recur somewhere.) Shingles are 64-bit polynomial hashes of token ids;
two distinct 5-grams collide with probability about 2^-64: negligible.

Beside the rate, the report gives the exact nearest-neighbour Jaccard of an evenly
spaced sample of 50 meetings, so a rate of 0 can be read against how far below the
threshold the corpus sits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from harness.synthetic.formats import NativeMeeting

if TYPE_CHECKING:
    import numpy as np

SHINGLE = 5
THRESHOLD = 0.5
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
BASE = 1_000_003
RARE_PAIR_BUDGET = 20_000_000  # sum of df^2 over the shingles whose overlaps are counted exactly
MAX_CANDIDATES_PER_MEETING = 20
BLOCK = 256
SAMPLE = 50


def _shingles(meetings: Sequence[NativeMeeting]) -> list[np.ndarray]:
    import numpy as np

    base = np.uint64(BASE)
    vocab: dict[str, int] = {}
    out = []
    for m in meetings:
        text = "\n".join(t.text for t in m.turns).casefold()
        ids = [vocab.setdefault(tok, len(vocab) + 1) for tok in _TOKEN.findall(text)]
        arr = np.asarray(ids, dtype=np.uint64)
        if len(arr) < SHINGLE:
            out.append(np.unique(arr))
            continue
        h = np.zeros(len(arr) - SHINGLE + 1, dtype=np.uint64)
        for k in range(SHINGLE):
            h = h * base + arr[k : len(arr) - SHINGLE + 1 + k]
        out.append(np.unique(h))
    return out


def near_duplicates(meetings: Sequence[NativeMeeting], threshold: float = THRESHOLD) -> dict[str, Any]:
    import numpy as np
    from scipy import sparse  # loaded only when a report is asked for

    ids = [m.meeting_id for m in meetings]
    sets = _shingles(meetings)
    n = len(sets)
    if n < 2:
        return _report(ids, [], 0, threshold, None)
    values, inverse, df = np.unique(np.concatenate(sets), return_inverse=True, return_counts=True)
    rows = np.repeat(np.arange(n), [len(s) for s in sets])
    matrix = sparse.csr_matrix((np.ones(len(rows), dtype=np.int32), (rows, inverse)), shape=(n, len(values)))
    sizes = np.array([len(s) for s in sets], dtype=np.int64)

    # Exact overlap on the rare shingles; the frequent ones can add at most min(F_a, F_b).
    # Should the bound prune too little, count more shingles exactly and try again.
    budget = RARE_PAIR_BUDGET
    while True:
        candidates = _candidates(matrix, sizes, df, budget, threshold)
        if candidates is not None:
            break
        budget *= 4
    pairs = []
    for a, b in candidates:
        jaccard = _jaccard(sets[a], sets[b])
        if jaccard >= threshold:
            pairs.append((ids[a], ids[b], jaccard))
    return _report(ids, pairs, len(candidates), threshold, _nearest_sample(matrix, sizes))


def _candidates(
    matrix: Any, sizes: np.ndarray, df: np.ndarray, budget: int, threshold: float
) -> list[tuple[int, int]] | None:
    """Pairs whose overlap bound reaches the threshold; None when too many to verify."""
    import numpy as np

    n = matrix.shape[0]
    order = np.argsort(df, kind="stable")
    cost = np.cumsum(df[order].astype(np.int64) ** 2)
    rare_cols = np.sort(order[cost <= budget]) if cost[-1] > budget else np.arange(len(df))
    rare = matrix[:, rare_cols]
    frequent = sizes - np.asarray(rare.sum(axis=1)).ravel()
    need_share = threshold / (1 + threshold)  # J >= t  <=>  overlap >= t/(1+t) (|a| + |b|)
    limit = None if len(rare_cols) == len(df) else MAX_CANDIDATES_PER_MEETING * n
    candidates: list[tuple[int, int]] = []
    for lo in range(0, n, BLOCK):
        hi = min(n, lo + BLOCK)
        overlap = (rare[lo:hi] @ rare.T).toarray().astype(np.int64)
        bound = overlap + np.minimum(frequent[lo:hi, None], frequent[None, :])
        need = need_share * (sizes[lo:hi, None] + sizes[None, :])
        a_idx, b_idx = np.nonzero(bound >= need - 1e-9)
        candidates.extend((a, b) for a, b in zip((a_idx + lo).tolist(), b_idx.tolist(), strict=True) if a < b)
        if limit is not None and len(candidates) > limit:
            return None
    return candidates


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    import numpy as np

    inter = len(np.intersect1d(a, b, assume_unique=True))
    union = len(a) + len(b) - inter
    return inter / union if union else 1.0


def _nearest_sample(matrix: Any, sizes: np.ndarray) -> dict[str, Any]:
    """Exact nearest-neighbour Jaccard for an evenly spaced sample of meetings."""
    import numpy as np

    n = matrix.shape[0]
    picks = np.unique(np.linspace(0, n - 1, min(n, SAMPLE)).round().astype(np.int64))
    overlap = (matrix[picks] @ matrix.T).toarray().astype(np.float64)
    union = sizes[picks, None] + sizes[None, :] - overlap
    jaccard = np.divide(overlap, union, out=np.zeros_like(overlap), where=union > 0)
    jaccard[np.arange(len(picks)), picks] = -1.0  # not itself
    nearest = jaccard.max(axis=1)
    return {
        "max": round(float(nearest.max()), 6),
        "median": round(float(np.median(nearest)), 6),
        "meetings": len(picks),
    }


def _report(
    ids: list[str], pairs: list[tuple[str, str, float]], compared: int, threshold: float,
    sample: dict[str, Any] | None,
) -> dict[str, Any]:
    flagged = sorted({x for a, b, _ in pairs for x in (a, b)})
    return {
        "definition": f"share of meetings whose most similar other meeting has word-{SHINGLE}-gram shingle "
        f"Jaccard >= {threshold} (exact, prefix-filtered all-pairs join)",
        "meetings": len(ids),
        "meetings_with_near_duplicate": len(flagged),
        "nearest_neighbour_jaccard_sample": sample,
        "pairs": [{"a": a, "b": b, "jaccard": round(j, 6)} for a, b, j in pairs[:50]],
        "pairs_compared": compared,
        "pairs_at_or_above_threshold": len(pairs),
        "rate": round(len(flagged) / len(ids), 6) if ids else None,
        "shingle_words": SHINGLE,
        "threshold": threshold,
    }
