"""Reading an arm's results back: from a store (an arm the sweep ran) or a path (measured elsewhere).

Everything the collector and the agreement analysis know about an arm comes through here:
whether its set is complete, failed, stale or missing; its rows indexed by (corpus, class);
its per-query values; and the fingerprint of the corpus state it was measured on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.errors import InputDataError
from harness.inputfiles import read_input_text
from harness.report.files import read_json_number
from harness.sweep.catalogue import Arm, canonical_json, config_hash
from harness.sweep.storage import (
    ArtefactStore,
    MissingArtefactError,
    arm_key,
    arm_prefix,
    incomplete_reason,
    read_complete_marker,
    read_failure,
)

METRICS_SCHEMA = "ragsweep.metrics/1"
PER_QUERY_SCHEMA = "ragsweep.per_query/1"
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


def _parse(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputDataError(f"{where}:{e.lineno}: not JSON ({e.msg})") from e


def index_rows(metrics: Mapping[str, Any], where: str) -> tuple[dict[tuple[str, str], dict[str, float]],
                                                                dict[tuple[str, str], int]]:
    """``(corpus, query_class) -> {measure: value}`` and ``-> n``; one row per key or an error."""
    if not isinstance(metrics, Mapping) or metrics.get("schema") != METRICS_SCHEMA:
        got = metrics.get("schema") if isinstance(metrics, Mapping) else type(metrics).__name__
        raise InputDataError(f"{where}: field schema: expected {METRICS_SCHEMA!r}, got {got!r}")
    rows = metrics.get("rows")
    if not isinstance(rows, list):
        raise InputDataError(f"{where}: field rows: expected a list")
    values: dict[tuple[str, str], dict[str, float]] = {}
    counts: dict[tuple[str, str], int] = {}
    for i, row in enumerate(rows):
        for name in ("corpus", "query_class", "metrics"):
            if not isinstance(row, Mapping) or name not in row:
                raise InputDataError(f"{where}: rows[{i}].{name} is missing")
        key = (str(row["corpus"]), str(row["query_class"]))
        if key in values:
            raise InputDataError(f"{where}: rows[{i}]: a second row for corpus {key[0]} class {key[1]}")
        try:
            values[key] = {m: read_json_number(v) for m, v in row["metrics"].items()}
        except (TypeError, ValueError, AttributeError) as e:
            raise InputDataError(f"{where}: rows[{i}].metrics: not numbers ({e})") from e
        counts[key] = int(row.get("n", 0))
    return values, counts


def check_per_query(doc: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(doc, Mapping) or doc.get("schema") != PER_QUERY_SCHEMA:
        got = doc.get("schema") if isinstance(doc, Mapping) else type(doc).__name__
        raise InputDataError(f"{where}: field schema: expected {PER_QUERY_SCHEMA!r}, got {got!r}")
    queries = doc.get("queries")
    if not isinstance(queries, Mapping):
        raise InputDataError(f"{where}: field queries: expected an object")
    for qid, q in queries.items():
        for name in ("corpus", "query_class", "measures"):
            if not isinstance(q, Mapping) or name not in q:
                raise InputDataError(f"{where}: queries.{qid}.{name} is missing")
    return doc


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
            metrics = _parse(store.get_text(arm_key(sweep_id, arm, "metrics.json")), f"{where}/metrics.json")
            per_query = _parse(store.get_text(arm_key(sweep_id, arm, "per_query.json")), f"{where}/per_query.json")
        except MissingArtefactError as e:  # deleted between the check and the read
            return ArmResults(arm=arm, status="incomplete", detail=str(e))
        return from_documents(arm, metrics, per_query, where)
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
    metrics = _parse(read_input_text(metrics_path), str(metrics_path))
    per_query_path = metrics_path.with_name("per_query.json")
    per_query = _parse(read_input_text(per_query_path), str(per_query_path)) if per_query_path.is_file() else None
    return from_documents(arm, metrics, per_query, str(metrics_path.parent), metrics_file=metrics_path.name)
