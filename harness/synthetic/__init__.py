"""The synthetic tier: a seeded generator, its ten-check validator, selection by gold
closure, the self-report, and the adapter into :mod:`harness.model`. No language model
anywhere; docs/synthetic.md describes the format and every rule.

Modules, in the order data travels: ``vocab`` and ``seeds`` (what is drawn, and how),
``skeleton`` (teams, series, dates, attendance), ``planting`` (what gold goes where),
``filler``/``blocks``/``render`` (turns and timings), ``queries`` (wording),
``generator`` (seed -> files), ``formats`` (the on-disk format), ``textscan`` and
``answers`` (re-deriving gold from text), ``validate``, ``select``, ``neardup`` and
``selfreport``, ``adapter``, and ``pipeline``/``folders`` (atomic generate/select).
Nothing here imports a heavy library at import time.
"""
