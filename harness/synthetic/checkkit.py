"""What every validator check is given: the corpus with its derived indexes, and a problem tally.

The checks live in :mod:`harness.synthetic.checks_structure` (the files, ids, titles, rosters and
turn timings) and :mod:`harness.synthetic.checks_gold` (every gold set and answer re-derived from
the text); :mod:`harness.synthetic.validate` names them and runs them in order.
"""

from __future__ import annotations

from functools import cached_property

from harness.synthetic.formats import NativeCorpus
from harness.synthetic.textscan import Occurrences, scan


class Problems:
    def __init__(self) -> None:
        self.count = 0
        self.first: str | None = None
        self.checked = 0

    def add(self, message: str) -> None:
        self.count += 1
        if self.first is None:
            self.first = message


class Context:
    def __init__(self, corpus: NativeCorpus) -> None:
        self.corpus = corpus
        self.meetings = corpus.meeting_by_id()

    @cached_property
    def occ(self) -> Occurrences:
        phrases: set[str] = {p.phrase for p in self.corpus.plants}
        for q in self.corpus.queries:
            phrases.update(x for x in (q.phrase, q.fact) if x)
        return scan(self.corpus.meetings, phrases)

    def span_ok(self, meeting_id: str, start: int, end: int) -> str | None:
        m = self.meetings.get(meeting_id)
        if m is None:
            return f"meeting {meeting_id} does not exist"
        if not 0 <= start <= end < len(m.turns):
            return f"span [{start}, {end}] is outside {meeting_id}'s {len(m.turns)} turns"
        return None
