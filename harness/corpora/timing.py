"""Synthetic turn timings for transcripts that carry none (QMSum).

The harness judges chunks by time overlap, so every turn needs a start and an end. A
corpus without timestamps gets invented ones, and its meetings say so
(``Meeting.timings_real = False``) so no timing-derived metric is computed from them.

The formula is deterministic and uses integer milliseconds, so the same transcript gets
the same timings on every machine:

* turns are back to back, in transcript order, starting at 0 s, with no gaps or overlap;
* a turn lasts ``max(MIN_TURN_MS, words * MS_PER_WORD)`` milliseconds, where ``words`` is
  :func:`harness.model.word_count` of its text: 150 words a minute (400 ms a word), and
  at least one second so that a one-word or empty turn still has a duration.
"""

from __future__ import annotations

MS_PER_WORD = 400
MIN_TURN_MS = 1000
SYNTHETIC_TIMING_RULE = f"sequential; duration_ms = max({MIN_TURN_MS}, words * {MS_PER_WORD})"


def synthetic_timings(word_counts: list[int]) -> list[tuple[float, float]]:
    """(start, end) in seconds for each turn, given each turn's word count."""
    timings = []
    start_ms = 0
    for words in word_counts:
        end_ms = start_ms + max(MIN_TURN_MS, words * MS_PER_WORD)
        timings.append((start_ms / 1000, end_ms / 1000))
        start_ms = end_ms
    return timings
