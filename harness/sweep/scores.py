"""Cross-encoder scores published once for a group's rerank arms, where they run as Jobs of their own.

On one machine a sweep's rerank processes share the machine's score cache (harness.retrieval.scorecache).
A Kubernetes arm Job's cache is its pod's scratch volume, which no other pod sees, so the rerank arms of
a group (eight of the catalogue's fifteen rerank the same 48 candidates a query) would each score
every pair again. Instead, after the group's legs are published, P scores Jobs (``jobs.scores``) each
score the pairs of every pending rerank arm of the group over its part of the judged queries (the k-th
of P: the k/P-th to the (k+1)/P-th) and publish them here; each rerank arm Job reads every part into
its own cache before its arms run (an arm task's ``scores``), checks the first pair it reads by scoring it
again, and scores only what no part holds. A pair's score is its own forward pass's, so the arm writes
the bytes it writes scoring every pair itself.

A part is ``sweeps/<sweep_id>/scores/<scores id>/part-<k>-of-<P>.json``: the scorer key the scores are
true of (the score cache's: weights, scoring rule, libraries, and the device's kernels), the legs they
were cut from, the arms, the part and its queries, and the records (``pack_scores``, base64) with
their sha256. The scores id hashes the legs key, the reranker and the pending rerank arms,
so a rerun of the same arms finds its parts again and needs no scores Job.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from harness.errors import IntegrityError
from harness.inputfiles import parse_json_input, validate_input
from harness.objectstore import ArtefactStore
from harness.retrieval.scorecache import pack_scores, unpack_scores
from harness.sweep.catalogue import Arm, canonical_json
from harness.sweep.storage import sweep_prefix

SCORES_SCHEMA: Literal["ragsweep.published-scores/1"] = "ragsweep.published-scores/1"


class PublishedScores(BaseModel):
    """One part of a group's published cross-encoder scores."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    schema_: Literal["ragsweep.published-scores/1"] = Field(SCORES_SCHEMA, alias="schema")
    scorer: dict[str, Any]  # the score cache's key (harness.retrieval.scorecache.scorer_key)
    legs: StrictStr  # the store key of the legs the candidates were cut from
    arms: list[StrictStr]  # the rerank arms whose pairs these are
    part: StrictStr  # "k/P"
    queries: tuple[StrictInt, StrictInt]  # the judged queries [first, end) this part scored
    pairs: StrictInt
    sha256: StrictStr  # of the packed records
    records: StrictStr  # base64 of harness.retrieval.scorecache.pack_scores

    def scores(self, where: str) -> dict[bytes, float]:
        try:
            data = base64.b64decode(self.records, validate=True)
        except ValueError as e:  # binascii.Error is one
            raise IntegrityError(f"{where}: its score records are not base64 ({e})") from e
        if hashlib.sha256(data).hexdigest() != self.sha256:
            raise IntegrityError(f"{where}: its score records do not match their sha256; rerun the sweep so its "
                                 "scores Job publishes them again")
        scores = unpack_scores(data, where)
        if len(scores) != self.pairs:
            raise IntegrityError(f"{where}: {len(scores)} score records, where it says {self.pairs}")
        return scores


def scores_id(legs: str, reranker: str, arms: Sequence[Arm]) -> str:
    """The store name of a group's published scores: its legs, the reranker (its archive's store key,
    which names its weights' sha256) and its pending rerank arms, hashed."""
    payload = {"schema": SCORES_SCHEMA, "legs": legs, "reranker": reranker,
               "arms": [arm.model_dump(exclude_none=True) for arm in arms]}
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()[:16]


def scores_store_keys(sweep_id: str, scores: str, parts: int) -> list[str]:
    """The store keys of the ``parts`` parts of a group's published scores, first to last."""
    return [f"{sweep_prefix(sweep_id)}/scores/{scores}/part-{k}-of-{parts}.json" for k in range(1, parts + 1)]


def publish_scores(store: ArtefactStore, key: str, *, scorer: dict[str, Any], legs: str, arms: Sequence[str],
                   part: tuple[int, int], queries: tuple[int, int], scores: dict[bytes, float]) -> PublishedScores:
    data = pack_scores(scores)
    doc = PublishedScores(scorer=scorer, legs=legs, arms=list(arms), part=f"{part[0] + 1}/{part[1]}",
                          queries=queries, pairs=len(scores), sha256=hashlib.sha256(data).hexdigest(),
                          records=base64.b64encode(data).decode("ascii"))
    store.put_text(key, doc.model_dump_json(by_alias=True) + "\n")
    return doc


def read_scores(store: ArtefactStore, key: str) -> tuple[PublishedScores, dict[bytes, float]]:
    """A published part and its scores, checked (a misfit is exit 4, damaged records exit 5, naming the key)."""
    where = f"{store.describe()}: {key}"
    doc = validate_input(PublishedScores, parse_json_input(store.get_text(key), where), where)
    return doc, doc.scores(where)
