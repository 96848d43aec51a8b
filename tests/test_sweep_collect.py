"""The collector over hand-built two-corpus results written into a real local store.

Control per-query nDCG@10 (every other measure follows from it, see ``measures``):

    qmsum      q1 0.2 (lookup)  q2 0.4 (lookup)  q3 0.1 (summarize)  q4 0.3 (summarize)
    synthetic  s1 0.5 (lookup)  s2 0.7 (lookup)  s3 0.2 (multi_file) s4 0.4 (multi_file)

Each arm adds a hand-chosen delta per query; the expected verdicts, p-values and Holm
adjustments below are worked out from those deltas, not copied from a run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.report.files import dumps
from harness.sweep.catalogue import Arm, Family, config_hash
from harness.sweep.collect import Settings, collect
from harness.sweep.gate import (
    CONTROL_MOVED,
    IDENTICAL,
    INERT,
    LOOKUP_REGRESSED,
    LOSS,
    NOT_COMPARABLE,
    SINGLE_CORPUS,
    SPLIT,
    WIN,
)
from harness.sweep.gatespec import DEFAULT_GATE, GateSpec
from harness.sweep.storage import LocalFolderStore, publish_arm, publish_failure

STATE = "state-1"
SWEEP = "s1"
CONTROL = {"q1": ("qmsum", "lookup", 0.2), "q2": ("qmsum", "lookup", 0.4), "q3": ("qmsum", "summarize", 0.1),
           "q4": ("qmsum", "summarize", 0.3), "s1": ("synthetic", "lookup", 0.5), "s2": ("synthetic", "lookup", 0.7),
           "s3": ("synthetic", "multi_file", 0.2), "s4": ("synthetic", "multi_file", 0.4)}
FAST = Settings(permutations=200, resamples=200, seed=7)
Delta = Callable[[str, str, str], float]  # (qid, corpus, class) -> delta


def measures(v: float) -> dict[str, float]:
    return {"nDCG@5": v / 2, "nDCG@10": v, "nDCG@20": v, "R@5": v, "R@10": v, "R@20": v, "MRR": v,
            "fileR@1": v, "fileR@10": v, "fileRank": 1.0}


def docs(delta: Delta, *, corpora: tuple[str, ...] = ("qmsum", "synthetic"), drop: tuple[str, ...] = (),
         index: dict[str, Any] | None = None) -> dict[str, str]:
    per_query = {qid: (c, k, round(v + delta(qid, c, k), 10)) for qid, (c, k, v) in CONTROL.items()
                 if c in corpora and qid not in drop}
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for qid, (corpus, query_class, _) in sorted(per_query.items()):
        groups[(corpus, query_class)].append(qid)
        groups[(corpus, "all")].append(qid)
    rows = []
    for (corpus, query_class), ids in sorted(groups.items()):
        mean = sum(per_query[q][2] for q in ids) / len(ids)
        rows.append({"corpus": corpus, "tier": "A", "query_class": query_class, "n": len(ids),
                     "metrics": measures(mean)})
    metrics = {
        "schema": "ragsweep.metrics/1", "control_name": "x",
        "corpora": [{"name": c, "version": "1", "tier": "A", "artefacts_sha256": "abc"} for c in corpora],
        "index": index or {"_meta": {"version": 1}, "documents": 80, "files": 8, "embedding_text": "header",
                           "embedding_verdict": "uniform"},
        "relevance_policy": {"high": 0.5, "low": 0.0, "binary": False},
        "chunking": {"max_words": 200}, "metric_engine": {"name": "pytrec_eval_terrier", "version": "0.5.10"},
        "retrieval": {"stage": "retrieve"}, "rows": rows,
    }
    pq = {"schema": "ragsweep.per_query/1", "measures": list(measures(0.0)),
          "queries": {qid: {"corpus": c, "query_class": k, "measures": measures(v)}
                      for qid, (c, k, v) in sorted(per_query.items())}}
    return {"metrics.json": dumps(metrics), "metrics.md": "# x\n", "per_query.json": dumps(pq),
            "runinfo.json": dumps({"elapsed_seconds": 1.0})}


def zero(qid: str, corpus: str, query_class: str) -> float:
    return 0.0


def arm(name: str, axis: str = "x", family: str = "fam", size: int = 10) -> Arm:
    return Arm(name=name, family=family, axis=axis, config={"stage": "retrieve", "size": size})


ARMS = {
    "ctl": arm("ctl", "control", size=48),
    "win": arm("win", size=1),
    "split": arm("split", size=2),
    "loss": arm("loss", size=3),
    "lookupdrop": arm("lookupdrop", size=4),
    "explicit": arm("explicit", "flag-inertness control", size=5),
    "inertarm": arm("inertarm", size=6),
    "gone": arm("gone", size=7),
    "broke": arm("broke", size=8),
}
FAMILY = Family(name="fam", control="ctl", arms=tuple(ARMS.values()))
DELTAS: dict[str, Delta] = {
    "ctl": zero,
    "win": lambda q, c, k: 0.1,
    "split": lambda q, c, k: 0.1 if c == "qmsum" else -0.1,
    "loss": lambda q, c, k: -0.05,
    # qmsum: lookup -0.02, summarize +0.2 (all +0.09); synthetic +0.1
    "lookupdrop": lambda q, c, k: (-0.02 if k == "lookup" else 0.2) if c == "qmsum" else 0.1,
    "explicit": zero,
    "inertarm": zero,
}


def publish(store: LocalFolderStore, name: str, delta: Delta, **kwargs: Any) -> None:
    a = ARMS[name]
    publish_arm(store, SWEEP, a, config_hash(a, STATE), docs(delta, **kwargs), state_identity=STATE)


def sweep(tmp_path: Path, **kwargs: Any) -> LocalFolderStore:
    store = LocalFolderStore(tmp_path)
    for name, delta in DELTAS.items():
        publish(store, name, delta, **kwargs)
    publish_failure(store, SWEEP, ARMS["broke"], config_hash(ARMS["broke"], STATE), "exit 3: mixed vector space")
    return store


def family_of(comparison: dict[str, Any]) -> dict[str, Any]:
    (family,) = comparison["families"]
    return family


def entry(comparison: dict[str, Any], name: str) -> dict[str, Any]:
    return next(e for e in family_of(comparison)["arms"] if e["arm"] == name)


def cell(e: dict[str, Any], corpus: str, query_class: str, measure: str = "nDCG@10") -> dict[str, Any]:
    key = (corpus, query_class, measure)
    return next(c for c in e["cells"] if (c["corpus"], c["query_class"], c["measure"]) == key)


def run(store: LocalFolderStore, arms: list[Arm] | None = None, **kwargs: Any) -> tuple[dict[str, Any], str]:
    return collect(store, SWEEP, arms or list(ARMS.values()), families=[FAMILY], state_identity=STATE,
                   settings=FAST, **kwargs)


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, LocalFolderStore]:
    store = sweep(tmp_path_factory.mktemp("sweep"))
    comparison, markdown = run(store)
    return comparison, markdown, store


def test_verdicts(collected: tuple[dict[str, Any], str, LocalFolderStore]) -> None:
    comparison, _, _ = collected
    verdicts = {e["arm"]: e["verdict"] for e in family_of(comparison)["arms"]}
    assert verdicts == {"win": WIN, "split": SPLIT, "loss": LOSS, "lookupdrop": LOOKUP_REGRESSED,
                        "explicit": IDENTICAL, "inertarm": INERT, "gone": "missing", "broke": "failed"}


def test_deltas_p_values_and_holm(collected: tuple[dict[str, Any], str, LocalFolderStore]) -> None:
    comparison, _, _ = collected
    win = cell(entry(comparison, "win"), "qmsum", "all")
    assert win["delta"] == pytest.approx(0.1)
    assert win["mean_paired_delta"] == pytest.approx(0.1)
    assert (win["n_control"], win["n_arm"], win["n_matched"]) == (4, 4, 4)
    # Four equal positive deltas: of the 16 sign assignments only all-plus and all-minus reach |sum| 0.4.
    assert win["p"] == pytest.approx(2 / 16)
    assert win["p_method"] == "exact"
    assert win["ci"] == pytest.approx([0.1, 0.1])
    # lookupdrop on qmsum all: deltas (-0.02, -0.02, +0.2, +0.2); |sum| >= 0.36 whenever the two 0.2s
    # share a sign: 8 of 16.
    drop = cell(entry(comparison, "lookupdrop"), "qmsum", "all")
    assert drop["delta"] == pytest.approx(0.09)
    assert drop["p"] == pytest.approx(0.5)
    # Holm over the six comparisons in this cell: raw (win .125, split .125, loss .125, lookupdrop .5,
    # explicit 1, inertarm 1) -> sorted x (6,5,4,3,2,1) = .75, .625, .5, 1.5, 2, 1 -> running max, capped:
    # .75, .75, .75, 1, 1, 1.
    holm = {e["arm"]: cell(e, "qmsum", "all")["p_holm"] for e in family_of(comparison)["arms"] if e["cells"]}
    assert holm == pytest.approx({"win": 0.75, "split": 0.75, "loss": 0.75, "lookupdrop": 1.0, "explicit": 1.0,
                                  "inertarm": 1.0})
    # The lookup class of qmsum has two queries: 4 sign assignments, 2 reach the observed |sum|.
    assert cell(entry(comparison, "win"), "qmsum", "lookup")["p"] == pytest.approx(0.5)
    assert cell(entry(comparison, "win"), "qmsum", "all", "nDCG@5")["delta"] == pytest.approx(0.05)
    measured = {c["measure"] for c in entry(comparison, "win")["cells"]}
    assert measured == {"nDCG@5", "nDCG@10", "nDCG@20", "R@5", "R@10", "R@20", "MRR", "fileR@1"}


def test_missing_and_failed_are_listed_by_name(collected: tuple[dict[str, Any], str, LocalFolderStore]) -> None:
    comparison, markdown, _ = collected
    family = family_of(comparison)
    assert [m["arm"] for m in family["missing"]] == ["gone"]
    assert family["failed"] == [{"arm": "broke", "axis": "x", "status": "failed",
                                 "detail": "exit 3: mixed vector space"}]
    assert "**failed**: broke — exit 3: mixed vector space" in markdown
    assert "**missing**: gone" in markdown


def test_winner_per_corpus(collected: tuple[dict[str, Any], str, LocalFolderStore]) -> None:
    comparison, _, _ = collected
    winner = family_of(comparison)["winner"]
    assert winner["qmsum"]["arms"] == ["win", "split"]  # both +0.1 on qmsum all: a tie is shown, not broken
    assert winner["synthetic"]["arms"] == ["win", "lookupdrop"]


def test_checks_pass_when_everything_matches(collected: tuple[dict[str, Any], str, LocalFolderStore]) -> None:
    comparison, markdown, _ = collected
    checks = family_of(comparison)["checks"]
    assert checks["corpus_state"]["same"] is True
    assert checks["query_set"]["same"] is True
    assert "every measured arm carries the same corpus/index fingerprint" in markdown


def test_outputs_are_written_and_byte_stable(collected: tuple[dict[str, Any], str, LocalFolderStore]) -> None:
    comparison, markdown, store = collected
    assert store.get_text("sweeps/s1/comparison.md") == markdown
    assert store.get_text("sweeps/s1/comparison.json") == dumps(comparison)
    png = store.get_bytes("sweeps/s1/comparison.png")
    assert png.startswith(b"\x89PNG")
    again, markdown_again = run(store)
    assert markdown_again == markdown and dumps(again) == dumps(comparison)
    assert store.get_bytes("sweeps/s1/comparison.png") == png
    assert "![deltas with 95% intervals](comparison.png)" in markdown


def test_single_corpus_is_never_adoptable(tmp_path: Path) -> None:
    store = sweep(tmp_path, corpora=("qmsum",))
    comparison, markdown = run(store)
    assert comparison["single_corpus"] is True
    verdicts = {e["arm"]: e["verdict"] for e in family_of(comparison)["arms"] if e["cells"]}
    assert verdicts == {"win": SINGLE_CORPUS, "split": SINGLE_CORPUS, "loss": SINGLE_CORPUS,
                        "lookupdrop": SINGLE_CORPUS, "inertarm": SINGLE_CORPUS, "explicit": IDENTICAL}
    assert "the gate cannot be applied" in markdown
    assert family_of(comparison)["winner"]["qmsum"]["arms"] == ["win", "split"]


def test_instrument_control_that_moves_is_called_out(tmp_path: Path) -> None:
    store = sweep(tmp_path)
    publish(store, "explicit", lambda q, c, k: 0.01 if q == "s3" else 0.0)
    comparison, _ = run(store)
    assert entry(comparison, "explicit")["verdict"] == CONTROL_MOVED


def test_per_query_changes_that_cancel_are_not_inert(tmp_path: Path) -> None:
    store = sweep(tmp_path)
    # q1 +0.1 and q2 -0.1: the lookup and all rows do not move, the queries do.
    publish(store, "inertarm", lambda q, c, k: {"q1": 0.1, "q2": -0.1}.get(q, 0.0))
    comparison, _ = run(store)
    inert = entry(comparison, "inertarm")
    assert cell(inert, "qmsum", "all")["delta"] == pytest.approx(0.0)
    assert inert["verdict"] != INERT


def test_a_different_corpus_state_is_reported(tmp_path: Path) -> None:
    store = sweep(tmp_path)
    publish(store, "loss", DELTAS["loss"], index={"_meta": {"version": 2}, "documents": 81, "files": 8})
    comparison, markdown = run(store)
    state = family_of(comparison)["checks"]["corpus_state"]
    assert state["same"] is False
    assert state["differs_from_control"] == {"loss": ["index"]}
    assert "corpus state differs between arms" in markdown


def test_embedding_choice_is_not_a_different_state(tmp_path: Path) -> None:
    store = sweep(tmp_path)
    publish(store, "loss", DELTAS["loss"], index={"_meta": {"version": 1}, "documents": 80, "files": 8,
                                                 "embedding_text": "body", "embedding_verdict": "unattributed"})
    comparison, _ = run(store)
    assert family_of(comparison)["checks"]["corpus_state"]["same"] is True


def test_query_set_mismatch_is_counted_and_matched(tmp_path: Path) -> None:
    store = sweep(tmp_path)
    publish(store, "win", DELTAS["win"], drop=("q4",))
    comparison, markdown = run(store)
    win = cell(entry(comparison, "win"), "qmsum", "all")
    assert (win["n_control"], win["n_arm"], win["n_matched"], win["counts_match"]) == (4, 3, 3, False)
    assert win["mean_paired_delta"] == pytest.approx(0.1)
    assert win["p"] == pytest.approx(2 / 8)  # three equal deltas
    differences = family_of(comparison)["checks"]["query_set"]["differences"]
    assert differences == [{"arm": "win", "corpus": "qmsum", "arm_queries": 3, "control_queries": 4,
                            "only_in_arm": 0, "only_in_control": 1}]
    assert "query set differs from the control" in markdown


def test_a_stale_arm_is_not_read_as_complete(tmp_path: Path) -> None:
    store = sweep(tmp_path)
    changed = Arm(name="win", family="fam", axis="x", config={"stage": "retrieve", "size": 99})
    family = Family(name="fam", control="ctl", arms=(ARMS["ctl"], changed))
    comparison, _ = collect(store, SWEEP, [changed], families=[family], state_identity=STATE, settings=FAST,
                            plot=False)
    (stale,) = family_of(comparison)["missing"]
    assert stale["arm"] == "win" and stale["status"] == "incomplete"
    assert "config or the corpus state changed" in stale["detail"]


def test_a_failure_for_another_config_is_not_this_configs_failure(tmp_path: Path) -> None:
    store = sweep(tmp_path)
    publish_failure(store, SWEEP, ARMS["gone"], "hash-of-an-older-config", "exit 2: bad flag")
    comparison, _ = run(store, plot=False)
    gone = next(m for m in family_of(comparison)["missing"] if m["arm"] == "gone")
    assert gone["status"] == "missing"
    assert "an earlier config failed: exit 2: bad flag" in gone["detail"]


def test_no_control_means_no_delta(tmp_path: Path) -> None:
    store = LocalFolderStore(tmp_path)
    publish(store, "win", DELTAS["win"])
    comparison, markdown = run(store, [ARMS["win"]], plot=False)
    assert entry(comparison, "win")["verdict"] == NOT_COMPARABLE
    assert "the control ctl has no complete results" in markdown


def test_contrasts_use_the_same_paired_test(tmp_path: Path) -> None:
    store = sweep(tmp_path)
    family = Family(name="fam", control="ctl", arms=tuple(ARMS.values()), contrasts=(("win", "loss"),))
    comparison, markdown = collect(store, SWEEP, list(ARMS.values()), families=[family], state_identity=STATE,
                                   settings=FAST, plot=False)
    (contrast,) = family_of(comparison)["contrasts"]
    c = cell(contrast, "synthetic", "all")
    assert c["delta"] == pytest.approx(0.15)
    assert c["p"] == pytest.approx(2 / 16)
    assert c["p_holm"] is not None and c["p_holm"] >= c["p"]
    assert "win vs loss" in markdown


def test_the_gate_block_is_the_spec_and_its_rule(collected: tuple[dict[str, Any], str, LocalFolderStore]) -> None:
    comparison, markdown, _ = collected
    assert comparison["schema"] == "ragsweep.comparison/2"
    assert {k: v for k, v in comparison["gate"].items() if k != "rule"} == DEFAULT_GATE.model_dump(mode="json")
    assert f"The gate: {DEFAULT_GATE.rule()}." in markdown
    # lookupdrop's qmsum lookup queries fell by 0.02 on every measure (nDCG@5 is half the value: -0.01)
    assert entry(comparison, "lookupdrop")["why"] == ("qmsum nDCG@5 -0.0100, nDCG@10 -0.0200, nDCG@20 -0.0200, "
                                                      "R@5 -0.0200, R@10 -0.0200, R@20 -0.0200, MRR -0.0200")
    assert "| lookup regressed: qmsum nDCG@5 -0.0100, nDCG@10 -0.0200" in markdown


def test_queries_improved_tied_worsened_per_class(collected: tuple[dict[str, Any], str, LocalFolderStore]) -> None:
    comparison, markdown, _ = collected
    drop = entry(comparison, "lookupdrop")
    # qmsum: both lookup queries -0.02, both summarize +0.2; synthetic: all four +0.1
    assert [(cell(drop, "qmsum", k)["improved"], cell(drop, "qmsum", k)["tied"], cell(drop, "qmsum", k)["worsened"])
            for k in ("lookup", "summarize", "all")] == [(0, 0, 2), (2, 0, 0), (2, 0, 2)]
    assert (cell(drop, "synthetic", "all")["improved"], cell(drop, "synthetic", "all")["worsened"]) == (4, 0)
    inert = cell(entry(comparison, "inertarm"), "qmsum", "all")
    assert (inert["improved"], inert["tied"], inert["worsened"]) == (0, 4, 0)
    assert "| lookupdrop | qmsum | 0 / 0 / 2 | 2 / 0 / 0 | — | 2 / 0 / 2 |" in markdown


def test_a_manifests_gate_decides_and_a_latency_budget_leaves_the_win_pending(tmp_path: Path) -> None:
    store = sweep(tmp_path)
    # protect the all row on MRR only, with a latency budget: lookupdrop's lookup loss no longer counts
    gate = GateSpec(protected_class="all", protected_measures=("MRR",), latency={"p95_added_ms": 5})
    comparison, markdown = run(store, gate=gate)
    assert comparison["gate"]["protected_class"] == "all"
    assert comparison["gate"]["latency"] == {"p95_added_ms": 5.0, "p95_ratio": None}
    assert entry(comparison, "lookupdrop")["verdict"] == WIN
    assert entry(comparison, "lookupdrop")["latency_gate"] == "latency.json"
    assert "latency_gate" not in entry(comparison, "split")
    # synthetic has no summarize row: a gate protecting it cannot be read there
    summarize, _ = run(store, gate=GateSpec(protected_class="summarize"))
    assert entry(summarize, "win")["verdict"] == NOT_COMPARABLE
    assert entry(summarize, "win")["why"].startswith("no synthetic summarize nDCG@5")
    assert "win: qmsum +0.0900, synthetic +0.1000 (quality only: the latency budget's verdict is in latency.md" \
        in markdown
