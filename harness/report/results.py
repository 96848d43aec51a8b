"""The results document: rows per corpus x tier x class, and everything the claim rests on.

metrics.json names what was measured (corpora with versions and checksums, composition,
licence tiers, seeds, metric engine and version, relevance policy, chunking, retrieval
config and index block) and is byte-identical across runs over an unchanged index:
no durations, hosts or timestamps (those go to runinfo.json).

The report stage writes metrics.json and per_query.json, so their models live here
(:class:`MetricsDoc`, :class:`PerQueryDoc`); every reader, in this stage or a later one,
reads through :func:`read_metrics` / :func:`read_per_query`. The files themselves are the
plain dicts built below, written by ``report.files.dumps``: the models check them and never
change a byte.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from harness.answers.results import AnswersBlock
from harness.corpora.integrity import checksum_digest
from harness.errors import InputDataError
from harness.inputfiles import validate_input
from harness.judge import Judgements
from harness.judge.policy import RelevancePolicy
from harness.metrics.engine import Evaluation, engine_info
from harness.metrics.files import median_rank
from harness.metrics.measures import FILE_MEASURES, RETRIEVAL_MEASURES
from harness.model import Corpus, Query

SCHEMA = "ragsweep.metrics/1"
PER_QUERY_SCHEMA = "ragsweep.per_query/1"
ROW_MEASURES: tuple[str, ...] = RETRIEVAL_MEASURES + FILE_MEASURES


def corpus_block(corpus: Corpus, judgements: Judgements) -> dict[str, Any]:
    judged = set(judgements.judged_queries)
    dropped = set(judgements.dropped_unjudgeable)
    classes = Counter(q.query_class for q in corpus.queries)
    domains = Counter(m.domain or "(none)" for m in corpus.meetings)
    return {
        "name": corpus.name,
        "version": corpus.version,
        "tier": corpus.tier,
        "licence": corpus.licence,
        "seed": corpus.seed,
        "artefacts": len(corpus.checksums),
        "artefacts_sha256": checksum_digest(corpus.checksums),
        "composition": {
            "files": len(corpus.meetings),
            "turns": sum(len(m.turns) for m in corpus.meetings),
            "words": sum(m.words for m in corpus.meetings),
            "files_with_real_timings": sum(1 for m in corpus.meetings if m.timings_real),
            "files_dated": sum(1 for m in corpus.meetings if m.recorded_date is not None),
            "domains": dict(sorted(domains.items())),
            "source_ids": sorted(m.source_id for m in corpus.meetings),
        },
        "queries": {
            "by_class": dict(sorted(classes.items())),
            "rank_scored": sum(1 for q in corpus.queries if q.id in judged),
            "dropped_unjudgeable": sum(1 for q in corpus.queries if q.id in dropped),
            "dropped_by_adapter": dict(sorted(corpus.dropped.items())),
        },
    }


def _aggregate(per_query: Mapping[str, Mapping[str, float]], ids: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in (*RETRIEVAL_MEASURES, "fileR@1", "fileR@10"):
        out[name] = sum(per_query[q][name] for q in ids) / len(ids)
    out["fileRank"] = median_rank([per_query[q]["fileRank"] for q in ids])
    return out


def build_rows(queries: Sequence[Query], per_query: Mapping[str, Mapping[str, float]],
               tiers: Mapping[str, str]) -> list[dict[str, Any]]:
    """Rows per corpus x tier x class, then an ``all`` row per corpus x tier."""
    groups: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for q in sorted(queries, key=lambda q: q.id):
        if q.id not in per_query:
            continue
        key = (q.corpus, tiers.get(q.corpus, q.tier))
        groups[key][q.query_class].append(q.id)
    rows: list[dict[str, Any]] = []
    for (corpus, tier), classes in sorted(groups.items()):
        everything: list[str] = []
        for query_class in sorted(classes):
            ids = classes[query_class]
            everything.extend(ids)
            rows.append({"corpus": corpus, "tier": tier, "query_class": query_class, "n": len(ids),
                         "metrics": _aggregate(per_query, ids)})
        rows.append({"corpus": corpus, "tier": tier, "query_class": "all", "n": len(everything),
                     "metrics": _aggregate(per_query, sorted(everything))})
    return rows


@dataclass(frozen=True)
class Claim:
    """Everything a metrics.json states, assembled by the caller (bench or the fixture run)."""

    control_name: str
    corpora: Sequence[Corpus]
    judgements: Judgements
    evaluation: Evaluation
    file_measures: Mapping[str, Mapping[str, float]]
    policy: RelevancePolicy
    chunking: Mapping[str, Any]
    retrieval: Mapping[str, Any]
    index: Mapping[str, Any]
    extra: Mapping[str, Any] = field(default_factory=dict)


def merged_per_query(claim: Claim) -> dict[str, dict[str, float]]:
    merged: dict[str, dict[str, float]] = {}
    for qid, values in claim.evaluation.per_query.items():
        merged[qid] = {**values, **claim.file_measures[qid]}
    return merged


def build_metrics(claim: Claim) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metrics.json document, per_query.json document)."""
    queries = [q for c in claim.corpora for q in c.queries]
    by_id = {q.id: q for q in queries}
    per_query = merged_per_query(claim)
    tiers = {c.name: c.tier for c in claim.corpora}
    rows = build_rows(queries, per_query, tiers)
    metrics = {
        "schema": SCHEMA,
        "control_name": claim.control_name,
        "corpora": [corpus_block(c, claim.judgements) for c in sorted(claim.corpora, key=lambda c: c.name)],
        "metric_engine": {**engine_info(), "measures": list(ROW_MEASURES),
                          "file_measures": "derived by the harness from the chunk run (not trec_eval)"},
        "relevance_policy": claim.policy.to_dict(),
        "chunking": dict(claim.chunking),
        "queries": {
            "scored": len(per_query),
            "dropped_unjudgeable": len(claim.judgements.dropped_unjudgeable),
            "dropped_unjudgeable_ids": list(claim.judgements.dropped_unjudgeable),
            "unanswered": len(claim.evaluation.unanswered),
            "judged_documents": claim.judgements.judged_documents,
        },
        "retrieval": dict(claim.retrieval),
        "index": dict(claim.index),
        **dict(claim.extra),
        "rows": rows,
    }
    per_query_doc = {
        "schema": PER_QUERY_SCHEMA,
        "control_name": claim.control_name,
        "measures": list(ROW_MEASURES),
        "queries": {
            qid: {"corpus": by_id[qid].corpus, "query_class": by_id[qid].query_class, "measures": per_query[qid]}
            for qid in sorted(per_query)
        },
    }
    # The models check what is written (a mismatch is a bug here: a pydantic error, exit 1); the
    # dicts are what dumps() writes, so the files' bytes do not depend on the models.
    MetricsDoc.model_validate(metrics)
    PerQueryDoc.model_validate(per_query_doc)
    return metrics, per_query_doc


# --- the files' models: what every reader may rely on ---------------------------------------------------

class _File(BaseModel):
    # A stage may add a block to metrics.json (answers, a stage's extra): they ride beside.
    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True)


class MetricsRow(BaseModel):
    """One row of metrics.json: a corpus x tier x query class (or ``all``) and its means.

    A measure is a JSON number or the string "inf"/"-inf"/"nan" (``report.files.dumps``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    corpus: StrictStr
    tier: StrictStr
    query_class: StrictStr
    n: StrictInt
    metrics: dict[str, float]


class MetricsDoc(_File):
    """metrics.json. The blocks beside ``rows`` are what the claim rests on; a reader that only
    compares rows (a run measured elsewhere, named in an agreement manifest) needs none of them."""

    schema_: Literal["ragsweep.metrics/1"] = Field(alias="schema")
    control_name: StrictStr | None = None
    corpora: list[dict[str, Any]] | None = None
    metric_engine: dict[str, Any] | None = None
    relevance_policy: dict[str, Any] | None = None
    chunking: dict[str, Any] | None = None
    queries: dict[str, Any] | None = None
    retrieval: dict[str, Any] | None = None
    index: dict[str, Any] | None = None
    answers: AnswersBlock | None = None  # the answers stage's block (bench writes it)
    rows: list[MetricsRow]


class PerQueryEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    corpus: StrictStr
    query_class: StrictStr
    measures: dict[str, float]


class PerQueryDoc(_File):
    """per_query.json: every scored query's measures, beside metrics.json's means."""

    schema_: Literal["ragsweep.per_query/1"] = Field(alias="schema")
    control_name: StrictStr | None = None
    measures: list[StrictStr] | None = None
    queries: dict[str, PerQueryEntry]


def _check_schema(doc: Any, expected: str, where: str) -> None:
    # First, and in these words: a file of another kind is named as such, not by its first odd field.
    if not isinstance(doc, dict) or doc.get("schema") != expected:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise InputDataError(f"{where}: field schema: expected {expected!r}, got {got!r}")


def read_metrics(doc: Any, where: str) -> MetricsDoc:
    """A parsed metrics.json (read from ``where``) checked against :class:`MetricsDoc`: the
    first problem is one line naming the file and the field (exit 4). One row per corpus x class."""
    _check_schema(doc, SCHEMA, where)
    checked = validate_input(MetricsDoc, doc, where)
    seen: set[tuple[str, str]] = set()
    for i, row in enumerate(checked.rows):
        key = (row.corpus, row.query_class)
        if key in seen:
            raise InputDataError(f"{where}: rows[{i}]: a second row for corpus {key[0]} class {key[1]}")
        seen.add(key)
    return checked


def read_per_query(doc: Any, where: str) -> PerQueryDoc:
    """A parsed per_query.json checked against :class:`PerQueryDoc` (one line naming the field)."""
    _check_schema(doc, PER_QUERY_SCHEMA, where)
    return validate_input(PerQueryDoc, doc, where)
