"""The interleaved latency measurement (harness.sweep.latency) over a fake retriever on a fake clock:
the order of the runs, the sample, and every number below are worked out by hand."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from harness.bench.arm import ArmConfig
from harness.bench.config import BenchConfig
from harness.model import Query
from harness.sweep.latency import measure_family, sample_indices, schedule


def _queries(counts: dict[str, int]) -> list[Query]:
    return [Query(id=f"{corpus}-{k}", corpus=corpus, query_class="lookup", text=f"{corpus} {k}")
            for corpus, n in counts.items() for k in range(n)]


def test_the_sample_is_evenly_spaced_per_corpus() -> None:
    judged = _queries({"a": 6, "b": 4})  # a at positions 0-5, b at 6-9
    # a: k * 6 // 3 for k < 3 -> 0, 2, 4; b: 6 + k * 4 // 3 -> 6, 7, 8
    assert sample_indices(judged, 3) == [0, 2, 4, 6, 7, 8]
    assert sample_indices(judged, 10) == list(range(10))  # fewer than asked: every query
    assert sample_indices(judged, 1) == [0, 6]


def test_the_schedule_interleaves_control_and_arms_every_pass() -> None:
    assert schedule(["x", "y"], 2) == [(1, None), (1, "x"), (1, None), (1, "y"),
                                       (2, None), (2, "x"), (2, None), (2, "y")]


@dataclass
class Clock:
    now: float = 0.0
    calls: list[str] = field(default_factory=list)

    def perf_counter(self) -> float:
        return self.now


@dataclass
class FakeRetriever:
    """Each retrieve advances the clock by this arm's cost for that call (ms), and logs who ran."""

    name: str
    clock: Clock
    costs: list[float]

    def retrieve(self, text: str, vector: Any, size: int, file_uuids: Any = None) -> list[Any]:
        self.clock.calls.append(self.name)
        self.clock.now += self.costs.pop(0) / 1000
        return []


def test_arms_are_timed_against_the_control_run_before_them(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.bench.run as bench_run
    import harness.bench.stages as stages

    clock = Clock()
    monkeypatch.setattr(stages, "time", clock)
    n = 2  # queries sampled
    # control: warm-up (2 calls), then before "slow" and before "same" in each of 3 passes; pass 2's run
    # before "slow" is a noisy 40 ms; every other control call 10 ms
    control = [10.0] * n + [10.0] * n + [10.0] * n + [40.0] * n + [10.0] * n + [10.0] * n + [10.0] * n
    costs = {"ctl": control, "slow": [22.0] * (3 * n), "same": [10.0] * (3 * n)}
    retrievers = {name: FakeRetriever(name, clock, list(c)) for name, c in costs.items()}
    monkeypatch.setattr(bench_run, "arm_retriever", lambda context, config: retrievers[config.control_name])

    def config(name: str) -> BenchConfig:
        return BenchConfig(arm=ArmConfig(stage="retrieve"), control_name=name)

    context = type("Context", (), {"judged": _queries({"a": 2})})()
    measured = measure_family(context, config("ctl"), [config("slow"), config("same")], [0, 1], [None, None], 3)
    assert clock.calls == ["ctl"] * n + (["ctl"] * n + ["slow"] * n + ["ctl"] * n + ["same"] * n) * 3
    slow, same = measured
    assert [p["added_p95_ms"] for p in slow["passes"]] == pytest.approx([12.0, -18.0, 12.0])
    # the gate reads the median over passes; the band is min-max over them
    assert slow["added_p95_ms"] == pytest.approx(12.0)
    assert slow["added_p95_ms_band"] == pytest.approx([-18.0, 12.0])
    assert slow["ratio_p95"] == pytest.approx(2.2) and slow["arm_p95"] == pytest.approx(22.0)
    assert slow["control_p95_band"] == pytest.approx([10.0, 40.0])
    assert (same["added_p95_ms"], same["ratio_p95"]) == pytest.approx((0.0, 1.0))
    assert slow["not_measured"] is None and slow["stage"] == "retrieve"


def _latency_doc(arms: list[str], *, sample: int = 16, passes: int = 3, backend: str = "embedded") -> dict[str, Any]:
    return {"schema": "ragsweep.latency/1", "sweep_id": "s", "backend": backend, "started_at": "2026-12-06T01:00:32Z",
            "design": {"passes": passes, "sample_per_corpus": sample},
            "families": [{"name": "fusion", "control": "c", "arms": [{"arm": a} for a in arms]}]}


def test_a_rerun_keeps_a_latency_json_that_already_times_every_arm(tmp_path: Any) -> None:
    import json

    from harness.objectstore import LocalFolderStore
    from harness.sweep.catalogue import Arm
    from harness.sweep.latency import already_measured, latency_key

    store = LocalFolderStore(tmp_path)
    arms = [Arm(name=n, family="fusion", axis="x") for n in ("c", "a1", "a2")]

    def check(**kw: Any) -> str | None:
        return already_measured(store, "s", arms, **{"backend": "embedded", "sample": 16, "passes": 3, **kw})

    assert check() is None  # nothing measured yet
    store.put_text(latency_key("s"), json.dumps(_latency_doc(["a1", "a2"])))
    assert check() == "2026-12-06T01:00:32Z"
    assert check(sample=32) is None and check(passes=5) is None and check(backend="stack") is None
    store.put_text(latency_key("s"), json.dumps(_latency_doc(["a1"])))  # a2 never timed
    assert check() is None
    store.put_text(latency_key("s"), "{not json")
    assert check() is None
