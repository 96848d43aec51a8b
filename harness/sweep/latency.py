"""Interleaved latency: each family's control and arms timed alternately over one query sample.

One run of an arm is never a latency measurement (the methodology's rrf-60 read +50% p95 in one
run and nothing in two more). After the arms are published and before the collector, one process
opens the read-only state once per family and, after one untimed warm-up run of the control,
times the sampled queries in the order

    pass 1: control, arm 1, control, arm 2, ...;  pass 2: the same;  ...  (``passes``, default 3)

one query at a time (concurrency 1), each arm's query answered by its bench stage's own timed
call (harness.bench.stages: retrieve times the retrieval, diversify retrieval and diversity
sampling) with no leg cache, so every run fetches its legs as an unshared arm does. The sample is
the same for every arm: per corpus, ``sample`` judged queries evenly spaced over the judged
queries sorted by id. Query vectors are encoded once, before any timing (the encoder is the same
for every arm). Per pass, an arm's p50/p95 is set beside the control run just before it; the gate
reads the median over passes of the added p95 (arm p95 minus that control's) and of the ratio, and
the min-max band over passes is written beside it. Rerank arms are not timed (``NOT_TIMED``).

Durations are written to ``latency.json`` only: comparison.json and comparison.md stay
byte-identical across reruns; :mod:`harness.sweep.latencygate` gives the budget's verdicts from it.
"""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.bench.config import BenchConfig
from harness.bench.latency import percentiles
from harness.bench.stages import STAGES, QueryRun
from harness.model import Backend, Query
from harness.objectstore import ArtefactStore
from harness.report.files import dumps
from harness.sweep.catalogue import Arm, Catalogue

LATENCY_SCHEMA = "ragsweep.latency/1"
DEFAULT_PASSES = 3
DEFAULT_SAMPLE = 16  # judged queries per corpus
NOT_TIMED = {
    "rerank": "not measured: the cross-encoder dominates a rerank arm's cost and, on a CPU, timing it "
              "interleaved would cost minutes per arm; its single-run p50/p95 is in the arm's runinfo.json",
}


def latency_key(sweep_id: str) -> str:
    return f"sweeps/{sweep_id}/latency.json"


def already_measured(store: ArtefactStore, sweep_id: str, arms: Sequence[Arm], *, backend: Backend,
                     sample: int, passes: int) -> str | None:
    """When the sweep's latency.json already times every one of ``arms`` with this design on this backend,
    when it was measured (a rerun that ran no arm need not measure again); else None."""
    import json

    key = latency_key(sweep_id)
    if not store.exists(key):
        return None
    try:
        doc = json.loads(store.get_text(key))
        design = doc["design"]
        timed = {a["arm"] for f in doc["families"] for a in f["arms"]}
    except (ValueError, KeyError, TypeError):
        return None  # unreadable: measure again, which rewrites it
    same = (doc.get("schema") == LATENCY_SCHEMA and doc.get("backend") == backend
            and design.get("sample_per_corpus") == sample and design.get("passes") == passes)
    controls = {f["control"] for f in doc["families"]}
    wanted = {a.name for a in arms} - controls
    return str(doc.get("started_at")) if same and wanted <= timed else None


def sample_indices(judged: Sequence[Query], per_corpus: int) -> list[int]:
    """Per corpus, ``per_corpus`` positions evenly spaced over its judged queries (all when fewer), in judged order."""
    by_corpus: dict[str, list[int]] = {}
    for i, query in enumerate(judged):
        by_corpus.setdefault(query.corpus, []).append(i)
    picked: list[int] = []
    for positions in by_corpus.values():
        n = len(positions)
        take = min(per_corpus, n)
        picked += [positions[k * n // take] for k in range(take)]
    return sorted(picked)


def schedule(arms: Sequence[str], passes: int) -> list[tuple[int, str | None]]:
    """(pass, arm) in run order; arm None is the control run that precedes that arm."""
    order: list[tuple[int, str | None]] = []
    for p in range(1, passes + 1):
        for arm in arms:
            order += [(p, None), (p, arm)]
    return order


def _run_ms(run: QueryRun, stage: str, indices: Sequence[int]) -> list[float]:
    answer = STAGES[stage].answer
    return [answer(run, i).seconds * 1000 for i in indices]


def _pass_entry(p: int, control: list[float], arm: list[float]) -> dict[str, Any]:
    c, a = percentiles(control), percentiles(arm)
    return {"pass": p, "control_p50": c["p50"], "control_p95": c["p95"], "arm_p50": a["p50"], "arm_p95": a["p95"],
            "added_p95_ms": a["p95"] - c["p95"], "ratio_p95": a["p95"] / c["p95"] if c["p95"] > 0 else None}


def _summary(passes: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"passes": passes}
    for key in ("control_p50", "control_p95", "arm_p50", "arm_p95", "added_p95_ms", "ratio_p95"):
        values = [p[key] for p in passes if p[key] is not None]
        out[key] = statistics.median(values) if values else None
        out[f"{key}_band"] = [min(values), max(values)] if values else None
    return out


def measure_family(context: Any, control: BenchConfig, arms: Sequence[BenchConfig], indices: Sequence[int],
                   vectors: Any, passes: int = DEFAULT_PASSES) -> list[dict[str, Any]]:
    """Time ``arms`` interleaved with ``control`` over the judged queries ``indices`` of an opened
    context (one without a leg cache); ``vectors[k]`` is the vector of ``indices[k]``."""
    from harness.bench.run import arm_retriever

    judged = [context.judged[i] for i in indices]
    runs = {c.control_name: QueryRun(retriever=arm_retriever(context, c), budget=c.budget, judged=judged,
                                     vectors=vectors, gold_files_only=c.arm.scope == "gold-files")
            for c in (control, *arms)}
    stage = {c.control_name: c.arm.stage for c in (control, *arms)}
    positions = range(len(judged))
    _run_ms(runs[control.control_name], stage[control.control_name], positions)  # warm-up, untimed
    by_arm: dict[str, list[dict[str, Any]]] = {c.control_name: [] for c in arms}
    before: list[float] = []
    for p, name in schedule([c.control_name for c in arms], passes):
        if name is None:
            before = _run_ms(runs[control.control_name], stage[control.control_name], positions)
        else:
            by_arm[name].append(_pass_entry(p, before, _run_ms(runs[name], stage[name], positions)))
    return [{"arm": name, "stage": stage[name], "not_measured": None, **_summary(entries)}
            for name, entries in by_arm.items()]


def measure_sweep(state_path: Path, store: ArtefactStore, sweep_id: str, arms: Sequence[Arm], catalogue: Catalogue,
                  *, backend: Backend = "embedded", sample: int = DEFAULT_SAMPLE, passes: int = DEFAULT_PASSES,
                  embedder: Any = None, opensearch_url: str = "", say: Callable[[str], None] = print) -> dict[str, Any]:
    """Measure every family of ``arms`` with a timed stage and write latency.json under the sweep."""
    from harness.bench.context import open_context
    from harness.errors import UsageError
    from harness.state import State

    if passes < 1 or sample < 1:
        raise UsageError("--latency-passes and --latency-sample must be at least 1")
    started = time.time()
    t0 = time.perf_counter()
    state = State.open(state_path)
    if embedder is None:
        from harness.index.embed import DEFAULT_EMBEDDING_MODEL, SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(DEFAULT_EMBEDDING_MODEL)
    wanted = {a.name for a in arms}
    families: list[dict[str, Any]] = []
    for family in catalogue.families:
        members = [a for a in family.arms if a.name in wanted and a.name != family.control]
        if not members:
            continue
        entry: dict[str, Any] = {"name": family.name, "control": family.control, "queries": [], "arms": []}
        families.append(entry)
        untimed = NOT_TIMED.get(family.control_arm.stage)
        if untimed is not None:
            entry["not_measured"] = f"the control {family.control} runs the {family.control_arm.stage} stage: {untimed}"
            entry["arms"] = [{"arm": a.name, "stage": a.stage, "not_measured": entry["not_measured"]} for a in members]
            continue

        def config(arm: Arm) -> BenchConfig:
            return BenchConfig(arm=arm.arm_config, control_name=arm.name, backend=backend)

        timed = [a for a in members if a.stage not in NOT_TIMED]
        control = config(family.control_arm)
        context = open_context(state, control, embedder, opensearch_url=opensearch_url, vectors=lambda _: None)
        indices = sample_indices(context.judged, sample)
        vectors = embedder.encode([context.judged[i].text for i in indices]) if indices else []
        entry["queries"] = [context.judged[i].id for i in indices]
        entry["not_measured"] = None
        f0 = time.perf_counter()
        measured = {m["arm"]: m for m in (measure_family(context, control, [config(a) for a in timed], indices,
                                                         vectors, passes) if indices and timed else [])}
        entry["seconds"] = round(time.perf_counter() - f0, 3)
        entry["arms"] = [measured.get(a.name) or {"arm": a.name, "stage": a.stage,
                                                  "not_measured": NOT_TIMED.get(a.stage, "no judged query sampled")}
                         for a in members]
        say(f"latency {family.name}: {len(timed)} arms x {passes} passes over {len(indices)} queries "
            f"in {entry['seconds']:.1f}s")
    doc = {"schema": LATENCY_SCHEMA, "sweep_id": sweep_id,
           "design": {"passes": passes, "sample_per_corpus": sample, "concurrency": 1, "warmup": "one control run",
                      "order": "per pass: control, arm 1, control, arm 2, ...; each arm against the control run "
                               "just before it", "reading": "median over passes; band: min-max over passes",
                      "timer": "time.perf_counter around the stage's own timed call", "leg_cache": False},
           "backend": backend, "host": platform.node(),
           "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
           "seconds": round(time.perf_counter() - t0, 3), "families": families}
    store.put_text(latency_key(sweep_id), dumps(doc))
    return doc
