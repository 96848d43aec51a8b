"""Regimes: how hard a generated archive is, by the structure real archives have.

A regime is a set of named mechanisms, each on or off, plus the meeting length. ``easy`` is
the generator as it was first written (every lookup plants a unique subject that BM25 finds
by itself; meetings of ~180 turns) and writes the same bytes it always did. ``archive`` is
the default: the structure that made the methodology's synthetic tier hard (its control
nDCG@10 0.2952) and that makes QMSum's AMI half hard (49 other meetings within 90% of gold):

* ``long_meetings``: ~400 filler turns, the length of a real hour-long meeting;
* ``series_vocabulary``: every session of a series talks about the same few things, so
  sessions of one series are near-duplicates of each other, as AMI's are;
* ``sibling_facts``: a lookup's subject is a standing item of its series, stated with a
  *different* value in 5–9 sessions; the question tells its session apart by date or by
  who attended, as a person asking would, and never by a phrase only that session says;
* ``shared_topics``: a multi-file topic is discussed by two or three series, so the topic
  names no series by itself: the question's cue is the series (team and kind); and each
  discussion runs over several turns, of which only the opening names the topic (the
  conclusion refers back to it), as a real one does.

No mechanism adds noise: no typos, no shuffled words. The validator re-derives every gold
set under every regime (docs/synthetic.md, "Regimes").
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import UsageError


@dataclass(frozen=True)
class Regime:
    name: str
    # filler turns per meeting: base + randint(lo, hi) + randint(lo, hi)
    filler_turns: tuple[int, int, int]
    series_vocabulary: bool
    sibling_facts: bool
    shared_topics: bool
    # extra filler turns inside a multi-file topic's discussion (shared_topics only): (lo, hi), or None
    topic_discussion: tuple[int, int] | None = None

    @property
    def mechanisms(self) -> dict[str, bool]:
        return {"long_meetings": self.filler_turns != EASY.filler_turns, "series_vocabulary": self.series_vocabulary,
                "sibling_facts": self.sibling_facts, "shared_topics": self.shared_topics}

    @property
    def is_easy(self) -> bool:
        return self == EASY


EASY = Regime("easy", (50, 10, 90), series_vocabulary=False, sibling_facts=False, shared_topics=False)
ARCHIVE = Regime("archive", (100, 50, 250), series_vocabulary=True, sibling_facts=True, shared_topics=True,
                 topic_discussion=(3, 6))

REGIMES: dict[str, Regime] = {r.name: r for r in (ARCHIVE, EASY)}
DEFAULT_REGIME = ARCHIVE.name
MECHANISMS: tuple[str, ...] = tuple(ARCHIVE.mechanisms)


def regime_named(name: str, *, without: tuple[str, ...] = ()) -> Regime:
    """A registered regime, with some of its mechanisms switched off (an ablation)."""
    try:
        base = REGIMES[name]
    except KeyError as e:
        raise UsageError(f"unknown regime {name!r}; known: {', '.join(REGIMES)}") from e
    unknown = [m for m in without if m not in MECHANISMS]
    if unknown:
        raise UsageError(f"unknown mechanism {unknown[0]!r}; known: {', '.join(MECHANISMS)}")
    if not without:
        return base
    return Regime(
        f"{name}-without-{'-'.join(sorted(without)).replace('_', '-')}",
        EASY.filler_turns if "long_meetings" in without else base.filler_turns,
        series_vocabulary=base.series_vocabulary and "series_vocabulary" not in without,
        sibling_facts=base.sibling_facts and "sibling_facts" not in without,
        shared_topics=base.shared_topics and "shared_topics" not in without,
        topic_discussion=None if "shared_topics" in without else base.topic_discussion,
    )


def regime_record(regime: Regime) -> dict[str, object]:
    return {"filler_turns": list(regime.filler_turns), "mechanisms": regime.mechanisms, "name": regime.name,
            "topic_discussion": list(regime.topic_discussion) if regime.topic_discussion else None}
