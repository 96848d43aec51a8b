"""Which cross-encoder a rerank family's numbers were scored with, for the notes under its tables.

The methodology's rerank numbers come from cross-encoder/ms-marco-MiniLM-L6-v2 (its lines 729 and
796). No package installable here ships those weights and no model hub is reachable, so a rerank
row on our side is always ragsweep's own reranker's; each rerank arm's metrics.json records which
(``retrieval.reranker``, :func:`harness.retrieval.rerank.reranker_provenance`), and the page says it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.reproduction.sources import Comparison, Reader
from harness.sweep.catalogue import CATALOGUE

METHODOLOGY_RERANKER = (
    "the methodology's cross-encoder (cross-encoder/ms-marco-MiniLM-L6-v2, its lines 729 and 796) cannot be "
    "installed here: no package ships its weights and no model hub is reachable, so every rerank row is "
    "ragsweep's own reranker's, named here")


def describe(provenance: Mapping[str, Any]) -> str:
    """One line: what the reranker is, from its recorded provenance."""
    digest = str(provenance.get("weights_sha256", "?"))[:12]
    kind = provenance.get("kind")
    if kind == "trained":
        corpus = provenance.get("training_corpus") or {}
        return (f"`ragsweep reranker train` on {provenance.get('base')} (weights sha256 {digest}…): "
                f"{provenance.get('steps')} steps, {provenance.get('training_pairs')} pairs from the "
                f"{corpus.get('name')} corpus {corpus.get('version')} of seed {corpus.get('seed')} "
                f"(never an evaluation seed), training seed {provenance.get('seed')}, on "
                f"{provenance.get('device', 'cpu')}")
    return f"{kind} weights {provenance.get('path_name', '')} (sha256 {digest}…)"


def reranker_notes(reader: Reader, sweeps_root: Path, comparison: Comparison, family: str) -> tuple[str, ...]:
    """The notes for a family's tables: the methodology's reranker, then ours (one line per distinct reranker)."""
    catalogue_family = CATALOGUE.family(family)
    if not catalogue_family.needs_reranker:
        return ()
    seen: dict[str, list[str]] = {}
    unread: list[str] = []
    for arm in catalogue_family.arms:
        if not arm.needs_reranker:
            continue
        path = sweeps_root / "sweeps" / comparison.sweep_id / family / arm.name / "metrics.json"
        provenance = reader.run(path).retrieval.get("reranker") if path.is_file() else None
        if not isinstance(provenance, Mapping):
            unread.append(arm.name)
            continue
        seen.setdefault(describe(provenance), []).append(arm.name)
    notes = [METHODOLOGY_RERANKER]
    for text, arms in seen.items():
        notes.append(f"reranker of {'every rerank row' if len(seen) == 1 and not unread else ', '.join(arms)}: "
                     f"{text}")
    if unread:
        notes.append(f"reranker not recorded beside the comparison (arm files not kept): {', '.join(unread)}")
    return tuple(notes)
