"""What the launcher runs before a sweep's arm Jobs: the Jobs that publish what a group's arms share.

Pure planning over the store's contents; no API calls. ``plan_legs``: one legs Job per group of two
or more pending arms whose legs are not yet published (docs/kubernetes.md, "Shared legs").
``plan_scores``: for a group with two or more pending rerank arms, P scores Jobs, each scoring the
cross-encoder pairs of every one of them over the k-th of P parts of the judged queries, unless that
part is already published (docs/kubernetes.md, "Shared cross-encoder scores").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.objectstore import ArtefactStore
from harness.sweep.catalogue import Arm
from harness.sweep.legs import ArmGroup, group_arms, group_id, legs_store_key, published_legs
from harness.sweep.scores import scores_id, scores_store_keys


@dataclass(frozen=True)
class LegsPlan:
    """Where each pending arm of a shared group reads its legs, and the legs Jobs still to run."""

    legs_of: dict[str, str]  # arm name -> store key of its group's legs.json
    jobs: list[tuple[str, ArmGroup, str]]  # (job name, group, store key) for legs not yet in the store


def plan_legs(store: ArtefactStore, sweep_id: str, arms: Sequence[Arm], backend: str, identity: str,
              sweep_arms: Sequence[Arm] = ()) -> LegsPlan:
    """Groups of two or more pending ``arms`` share legs; a group whose legs.json, or the deeper legs.json
    of one of the sweep's other arms (``sweep_arms``: harness.sweep.legs.published_legs), is already
    published needs no Job."""
    from harness.sweep.k8s.builders import legs_job_name

    legs_of: dict[str, str] = {}
    jobs: list[tuple[str, ArmGroup, str]] = []
    for group in group_arms(arms, backend):
        if not group.shared or group.key is None:
            continue
        found = published_legs(store, sweep_id, identity, group, sweep_arms, backend)
        gid = group_id(identity, group.key)
        key = found or legs_store_key(sweep_id, gid)
        legs_of.update({arm.name: key for arm in group.arms})
        if found is None:
            jobs.append((legs_job_name(sweep_id, gid), group, key))
    return LegsPlan(legs_of, jobs)


@dataclass(frozen=True)
class ScoresJob:
    name: str
    arms: tuple[Arm, ...]  # the group's pending rerank arms, whose pairs it scores
    legs: str  # the store key of the legs their candidates are cut from
    key: str  # the store key it publishes its part to
    part: tuple[int, int]  # (k, P): the k-th of P parts of the judged queries (k from 0)


@dataclass(frozen=True)
class ScoresPlan:
    """Where each pending rerank arm of a shared group reads its group's scores, and the Jobs still to run."""

    scores_of: dict[str, list[str]]  # arm name -> store keys of its group's parts, first to last
    jobs: list[ScoresJob]  # for parts not yet in the store


def plan_scores(store: ArtefactStore, sweep_id: str, arms: Sequence[Arm], backend: str, legs_of: dict[str, str],
                reranker_key: str, parts: int) -> ScoresPlan:
    """A group of two or more pending rerank ``arms`` whose legs are shared (``legs_of``, plan_legs) has its
    pairs scored by min(``parts``, its rerank arms) scores Jobs, one part of the queries each; a part
    already published (a rerun of the same arms with the same reranker, ``reranker_key``) needs no Job."""
    from harness.sweep.k8s.builders import scores_job_name

    scores_of: dict[str, list[str]] = {}
    jobs: list[ScoresJob] = []
    for group in group_arms(arms, backend):
        rerank = tuple(a for a in group.arms if a.needs_reranker and a.name in legs_of)
        if len(rerank) < 2:
            continue
        legs = legs_of[rerank[0].name]
        sid = scores_id(legs, reranker_key, rerank)
        count = max(1, min(parts, len(rerank)))
        keys = scores_store_keys(sweep_id, sid, count)
        scores_of.update({arm.name: keys for arm in rerank})
        jobs += [ScoresJob(scores_job_name(sweep_id, sid, (k, count)), rerank, legs, key, (k, count))
                 for k, key in enumerate(keys) if not store.exists(key)]
    return ScoresPlan(scores_of, jobs)
