"""The measures the harness reports, by the one name each is printed and parsed as.

``nDCG@10`` prints as ``nDCG@10`` and parses back to the same measure; the trec_eval key
(``ndcg_cut_10``) is what the engine is asked for. File-level measures are computed by
the harness from the chunk run (they have no trec_eval equivalent) and say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.errors import UsageError

Source = Literal["trec_eval", "file"]


@dataclass(frozen=True)
class Measure:
    name: str
    source: Source
    trec_key: str | None
    cutoff: int | None
    description: str


def _trec(name: str, key: str, cutoff: int | None, description: str) -> Measure:
    return Measure(name, "trec_eval", key, cutoff, description)


MEASURES: dict[str, Measure] = {
    m.name: m
    for m in (
        *(_trec(f"nDCG@{k}", f"ndcg_cut_{k}", k, f"nDCG truncated at {k}, ideal truncated at {k}, linear gain")
          for k in (5, 10, 20)),
        *(_trec(f"R@{k}", f"recall_{k}", k, f"share of the query's relevant chunks in the top {k}")
          for k in (5, 10, 20)),
        _trec("MRR", "recip_rank", None, "1 / rank of the first relevant chunk (0 when none)"),
        Measure("fileR@1", "file", None, 1, "share of gold files whose first chunk is the top-ranked file"),
        Measure("fileR@10", "file", None, 10, "share of gold files among the first 10 distinct files"),
        Measure("fileRank", "file", None, None,
                "rank of the best gold file among distinct files (median across queries; "
                "a query that never surfaces a gold file counts as infinitely far)"),
    )
}

RETRIEVAL_MEASURES: tuple[str, ...] = ("nDCG@5", "nDCG@10", "nDCG@20", "R@5", "R@10", "R@20", "MRR")
FILE_MEASURES: tuple[str, ...] = ("fileR@1", "fileR@10", "fileRank")

# Every spelling read: the printed name in any case (``ndcg@10``) and the trec key (``ndcg_cut_10``),
# character for character. Nothing is dropped: ``nDCG@-5`` is not nDCG@5, ``fileR@1.0`` not fileR@10.
_SPELLINGS: dict[str, str] = {
    **{name.lower(): name for name in MEASURES},
    **{m.trec_key: m.name for m in MEASURES.values() if m.trec_key is not None},
}


def parse_measure(text: str) -> Measure:
    """A measure by its printed name (in any case: ``ndcg@10``) or its trec key (``ndcg_cut_10``), exactly:
    no character dropped or added, ASCII only (``str.lower`` maps the Kelvin sign to ``k``)."""
    name = _SPELLINGS.get(text.lower()) if text.isascii() else None
    if name is not None:
        return MEASURES[name]
    raise UsageError(f"unknown measure {text!r}; known: {', '.join(MEASURES)}")


def trec_measure_set(names: tuple[str, ...]) -> set[str]:
    """The pytrec_eval measure specification for the given trec measures."""
    families: dict[str, list[int]] = {}
    plain: set[str] = set()
    for name in names:
        m = MEASURES[name]
        if m.source != "trec_eval" or m.trec_key is None:
            continue
        if m.cutoff is None:
            plain.add(m.trec_key)
        else:
            family = m.trec_key.rsplit("_", 1)[0]
            families.setdefault(family, []).append(m.cutoff)
    spec = {f"{fam}.{','.join(str(k) for k in sorted(ks))}" for fam, ks in families.items()}
    return spec | plain
