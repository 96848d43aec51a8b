"""Bench stage: one arm end to end — open a state, retrieve, judge, score, report.

``config`` (BenchConfig) -> ``stages`` (the registry: retrieve, rerank, diversify, route;
``routing`` is the route stage's digest leg) -> ``run`` (``run_bench``), with ``answers``
(the answers block, SQLite or the stack's PostgreSQL), ``stack`` (the settled OpenSearch
session) and ``latency`` beside it. It comes after report, which renders and writes what
it measures, and before sweep, which fans arms out.
"""

from harness.bench.config import SCOPES, BenchConfig, Scope, Stage
from harness.bench.run import run_bench
from harness.bench.stages import STAGES, BenchStage

__all__ = ["SCOPES", "STAGES", "BenchConfig", "BenchStage", "Scope", "Stage", "run_bench"]
