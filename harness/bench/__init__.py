"""Bench stage: one arm end to end — open a state, retrieve, judge, score, report.

``arm`` (ArmConfig: what distinguishes an arm; light, so the CLI builds its flags from it
without loading the stage) -> ``routing`` -> ``stages`` (the registry: retrieve, rerank,
diversify, route) -> ``config`` (BenchConfig: an arm plus how this run is made) ->
``answers`` (SQLite or the stack's PostgreSQL), ``stack`` (the settled OpenSearch session),
``latency`` -> ``run`` (``run_bench``). It comes after report, which renders and writes what
it measures, and before sweep, which fans arms out. Import the modules themselves: this
package imports nothing, so ``ragsweep --help`` stays light.
"""
