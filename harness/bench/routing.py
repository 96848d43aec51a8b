"""The route stage's digest leg: recorded beside the ranked list, never merged into it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from harness.model import Query
from harness.retrieval.chunks import Hit
from harness.retrieval.router import route


class _Outcome(Protocol):
    digest: dict[str, Any] | None


def digest_leg(retriever: Any, query: Query, vector: Any, hits: list[Hit],
               scope: list[str] | None) -> dict[str, Any]:
    decision = route(query.text)
    record: dict[str, Any] = {"routed_class": decision.query_class, "rule": decision.rule,
                              "tiers": list(decision.tiers), "quoted_phrase": decision.quoted_phrase}
    gold = set(query.gold_files)
    chunk_files: list[str] = []
    for h in hits:
        if h.file_uuid not in chunk_files:
            chunk_files.append(h.file_uuid)
    record["chunk_leg_gold_in_top10_files"] = bool(gold.intersection(chunk_files[:10]))
    if "digest" in decision.tiers:
        digests = retriever.retrieve(query.text, vector, 10, doc_type="digest", file_uuids=scope)
        record["digest_hits"] = [h.doc_id for h in digests]
        digest_files = {h.file_uuid for h in digests}
        record["digest_found_gold_file"] = bool(gold & digest_files)
        record["rescued"] = bool(gold & digest_files) and not record["chunk_leg_gold_in_top10_files"]
    return record


def digest_summary(outcomes: Mapping[str, _Outcome], judged: Sequence[Query]) -> dict[str, Any]:
    records = {q.id: outcomes[q.id].digest or {} for q in judged}
    routed = [r for r in records.values() if "digest" in r.get("tiers", [])]
    confusion: dict[str, dict[str, int]] = {}
    for q in judged:
        got = records[q.id].get("routed_class", "?")
        confusion.setdefault(q.query_class, {}).setdefault(got, 0)
        confusion[q.query_class][got] += 1
    return {
        "queries_scored": len(judged),
        "routed_to_digest_tier": len(routed),
        "tier_returned_something": sum(1 for r in routed if r.get("digest_hits")),
        "digest_found_gold_file": sum(1 for r in routed if r.get("digest_found_gold_file")),
        "chunk_leg_gold_in_top10_files": sum(1 for r in routed if r.get("chunk_leg_gold_in_top10_files")),
        "rescued": sum(1 for r in routed if r.get("rescued")),
        "quoted_phrase_removed_digest_tier": sum(
            1 for r in records.values() if r.get("routed_class") == "summarize" and r.get("quoted_phrase")),
        "router_confusion": {k: dict(sorted(v.items())) for k, v in sorted(confusion.items())},
        "per_query": {qid: records[qid] for qid in sorted(records)},
        "merged_into_ranked_list": False,
    }
