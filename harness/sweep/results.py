"""Reading an arm's results back: from a store (an arm the sweep ran) or a path (measured elsewhere).

Everything the collector and the agreement analysis know about an arm comes through here:
whether its set is complete, failed, stale or missing; its rows indexed by (corpus, class);
its per-query values; and the fingerprint of the corpus state it was measured on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast

from harness.inputfiles import parse_json_input, read_json_input
from harness.report.files import read_json_number
from harness.report.results import read_metrics, read_per_query
from harness.sweep.catalogue import Arm, canonical_json, config_hash
from harness.sweep.measured import measured_on
from harness.sweep.storage import (
    ArtefactStore,
    MissingArtefactError,
    arm_key,
    arm_prefix,
    incomplete_reason,
    read_complete_marker,
    read_failure,
)

Status = Literal["complete", "failed", "incomplete", "missing"]
# Index-block keys that describe the embedding an arm chose (--embedding-text), not the state.
_EMBEDDING_CHOICE_KEYS = frozenset({"embedding_models", "embedding_verdict", "embedding_unattributed",
                                    "embedding_dimension", "embedding_text"})
# What a corpus state is: the same values in every arm measured on it, whatever the arm's flags.
FINGERPRINT_PARTS: tuple[str, ...] = ("corpora", "index", "chunking", "relevance_policy", "metric_engine")


@dataclass(frozen=True)
class ArmResults:
    """One arm as read back. ``metrics``/``per_query`` are present only when complete."""

    arm: Arm
    status: Status
    detail: str = ""
    metrics: Mapping[str, Any] | None = None
    per_query: Mapping[str, Any] | None = None
    rows: Mapping[tuple[str, str], Mapping[str, float]] = field(default_factory=dict)
    row_n: Mapping[tuple[str, str], int] = field(default_factory=dict)
    measured_on: str | None = None  # the measurement identity complete.json records (harness.sweep.measured)

    @property
    def complete(self) -> bool:
        return self.status == "complete"

    @property
    def corpora(self) -> list[str]:
        return sorted({corpus for corpus, _ in self.rows})

    def query_ids(self, corpus: str, query_class: str = "all") -> set[str]:
        if self.per_query is None:
            return set()
        return {qid for qid, q in self.per_query["queries"].items()
                if q["corpus"] == corpus and (query_class == "all" or q["query_class"] == query_class)}

    def query_value(self, qid: str, measure: str) -> float:
        assert self.per_query is not None
        return read_json_number(self.per_query["queries"][qid]["measures"][measure])


def index_rows(metrics: Any, where: str) -> tuple[dict[tuple[str, str], dict[str, float]],
                                                  dict[tuple[str, str], int]]:
    """``(corpus, query_class) -> {measure: value}`` and ``-> n``, read through the report stage's
    :class:`~harness.report.results.MetricsDoc` (one row per key, or an error naming the field)."""
    rows = read_metrics(metrics, where).rows
    values = {(row.corpus, row.query_class): dict(row.metrics) for row in rows}
    counts = {(row.corpus, row.query_class): row.n for row in rows}
    return values, counts


def check_per_query(doc: Any, where: str) -> Mapping[str, Any]:
    read_per_query(doc, where)
    return cast(Mapping[str, Any], doc)


def state_fingerprint(metrics: Mapping[str, Any]) -> dict[str, str]:
    """sha256 per part of what the arm was measured on, and ``state`` over all of them."""
    parts: dict[str, Any] = {}
    for name in FINGERPRINT_PARTS:
        value = metrics.get(name)
        if name == "index" and isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if k not in _EMBEDDING_CHOICE_KEYS}
        parts[name] = value
    digests = {name: hashlib.sha256(canonical_json(value).encode()).hexdigest() for name, value in parts.items()}
    digests["state"] = hashlib.sha256(canonical_json(digests).encode()).hexdigest()
    return digests


def from_documents(arm: Arm, metrics: Any, per_query: Any, where: str, *,
                   metrics_file: str = "metrics.json") -> ArmResults:
    rows, counts = index_rows(metrics, f"{where}/{metrics_file}")
    checked = None if per_query is None else check_per_query(per_query, f"{where}/per_query.json")
    return ArmResults(arm=arm, status="complete", metrics=metrics, per_query=checked, rows=rows, row_n=counts)


def load_from_store(store: ArtefactStore, sweep_id: str, arm: Arm, *,
                    state_identity: str | None = None) -> ArmResults:
    """Read an arm's set if complete; otherwise say which of failed / incomplete / missing it is.

    With ``state_identity`` the marker must carry ``config_hash(arm, state_identity)``. Without
    it the identity recorded in the marker is used, so an arm whose catalogue config changed
    since it was measured still reads as incomplete rather than as the new config's result.
    """
    marker = read_complete_marker(store, sweep_id, arm)
    reason: str | None = "no complete.json"
    if marker is not None:
        identity = state_identity if state_identity is not None else marker.get("state_identity")
        if identity is not None:
            reason = incomplete_reason(store, sweep_id, arm, config_hash(arm, str(identity)))
        elif marker.get("config") != arm.resolved_config():
            reason = "complete.json records a different config from the catalogue's"
        else:
            reason = incomplete_reason(store, sweep_id, arm, str(marker.get("config_hash")))
    if reason is None:
        where = f"{store.describe()}/{arm_prefix(sweep_id, arm)}"
        try:
            metrics, per_query = (parse_json_input(store.get_text(arm_key(sweep_id, arm, name)), f"{where}/{name}")
                                  for name in ("metrics.json", "per_query.json"))
        except MissingArtefactError as e:  # deleted between the check and the read
            return ArmResults(arm=arm, status="incomplete", detail=str(e))
        return replace(from_documents(arm, metrics, per_query, where), measured_on=measured_on(marker or {}))
    failure = read_failure(store, sweep_id, arm)
    if failure is not None:
        error = str(failure.get("error", "(no error recorded)"))
        if state_identity is not None and failure.get("config_hash") != config_hash(arm, state_identity):
            return ArmResults(arm=arm, status="missing",
                              detail=f"not run for this config (an earlier config failed: {error})")
        return ArmResults(arm=arm, status="failed", detail=error)
    if marker is not None:
        return ArmResults(arm=arm, status="incomplete", detail=reason)
    present = [k.rsplit("/", 1)[-1] for k in store.list(f"{arm_prefix(sweep_id, arm)}/")]
    if present:
        return ArmResults(arm=arm, status="incomplete", detail=f"no complete.json (present: {', '.join(present)})")
    return ArmResults(arm=arm, status="missing", detail="nothing written")


def load_from_path(arm: Arm, metrics_path: Path) -> ArmResults:
    """An arm measured elsewhere: its metrics.json, and per_query.json beside it when present."""
    if not metrics_path.exists():
        return ArmResults(arm=arm, status="missing", detail=f"{metrics_path}: no such file")
    metrics = read_json_input(metrics_path)
    per_query_path = metrics_path.with_name("per_query.json")
    per_query = read_json_input(per_query_path) if per_query_path.is_file() else None
    return from_documents(arm, metrics, per_query, str(metrics_path.parent), metrics_file=metrics_path.name)
