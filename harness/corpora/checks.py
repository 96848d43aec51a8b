"""What a corpus must hold before anything is indexed or scored from it: ids that are what they look like,
each id once, gold inside its meetings, each file in one corpus.

A query id is a key everywhere downstream (qrels, runs, per-query results): one with a NUL or a trailing
space reads as another id in a TREC file, and two queries under one id are scored as one. So the id rules
live here once, and every reader of ids applies them: ``ragsweep state build`` before it loads a model,
:meth:`harness.state.State.open` on the copies a state holds, and the synthetic validator's ``ids`` check
(``ragsweep synth validate``). :func:`id_problem` and :func:`repeated` are the rules;
:func:`corpus_problems` applies them to corpora in the model; :func:`check_corpora` raises the first
problem as one line (exit 4).
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence

from harness.errors import InputDataError
from harness.model import Corpus

# what to do about a corpus that breaks a rule, where it was read from its folder
FIX_CORPUS = ("fix the corpus (for the synthetic tier: regenerate it, `ragsweep synth generate`; for a fetched "
              "corpus: fetch it again, `ragsweep corpus fetch`)")


def id_problem(kind: str, value: str) -> str | None:
    """Why ``value`` cannot be a ``kind`` ("query id", "meeting id"), or None: an id is non-empty and every
    character printable and not whitespace (no NUL, no tab, no trailing space, no zero-width space)."""
    if not value:
        return f"{kind} {value!r} is empty"
    for char in value:
        if unicodedata.category(char) == "Cc":
            return f"{kind} {value!r} holds the control character {char!r}"
        if char.isspace():
            return f"{kind} {value!r} holds the whitespace {char!r}"
        if not char.isprintable():
            return f"{kind} {value!r} holds the unprintable character {char!r} (U+{ord(char):04X})"
    return None


def repeated(kind: str, values: Iterable[str]) -> list[str]:
    """One problem per value that occurs more than once, in sorted order."""
    return [f"{kind} {value!r} occurs {n} times" for value, n in sorted(Counter(values).items()) if n > 1]


def corpus_problems(corpora: Sequence[Corpus]) -> Iterator[tuple[str, str]]:
    """(corpus name, problem) for every rule the corpora break: meeting and query ids well formed, every
    gold span inside a meeting of its own corpus, a file (file_uuid) in one corpus once, and a query id once
    across them all (their queries are scored in one qrels)."""
    for corpus in corpora:
        meetings = {m.file_uuid: (m.source_id, len(m.turns)) for m in corpus.meetings}
        for meeting in corpus.meetings:
            problem = id_problem("meeting id", meeting.source_id)
            if problem:
                yield corpus.name, problem
        for query in corpus.queries:
            problem = id_problem("query id", query.id)
            if problem:
                yield corpus.name, problem
            for j, span in enumerate(query.gold):
                bad = _span_problem(span.file_uuid, span.start_turn, span.end_turn, meetings.get(span.file_uuid))
                if bad:
                    yield corpus.name, f"query {query.id!r} gold[{j}]: {bad}"
    owners: dict[str, list[tuple[str, str]]] = {}
    for corpus in corpora:
        for meeting in corpus.meetings:
            owners.setdefault(meeting.file_uuid, []).append((corpus.name, meeting.source_id))
    for file_uuid, held in owners.items():
        if len(held) > 1:
            names = sorted({name for name, _ in held})
            where = f"is in the corpora {', '.join(names)}: a file belongs to one corpus" if len(names) > 1 \
                else f"occurs {len(held)} times"
            yield held[0][0], f"file {file_uuid} (meeting {held[0][1]!r}) {where}"
    first: dict[str, str] = {}
    for corpus in corpora:
        for query in corpus.queries:
            first.setdefault(query.id, corpus.name)
    counts = Counter(q.id for c in corpora for q in c.queries)
    for qid in sorted(q for q, n in counts.items() if n > 1):
        yield first[qid], repeated("query id", [qid] * counts[qid])[0]


def _span_problem(file_uuid: str, start: int, end: int, meeting: tuple[str, int] | None) -> str | None:
    if meeting is None:
        return f"file {file_uuid} is not a meeting of this corpus"
    source, n_turns = meeting
    if not 0 <= start <= end < n_turns:
        return f"span [{start}, {end}] is outside meeting {source!r} ({n_turns} turns)"
    return None


def check_corpora(corpora: Sequence[Corpus], places: Mapping[str, str] | None = None, *,
                  advice: str = FIX_CORPUS) -> None:
    """Raise InputDataError (exit 4) with the first of :func:`corpus_problems`, one line: where the corpus
    was read (``places[name]``, else nothing), its name, the problem, how many more, and ``advice``."""
    found = list(corpus_problems(corpora))
    if not found:
        return
    name, problem = found[0]
    place = (places or {}).get(name)
    more = f" ({len(found) - 1} more problem(s))" if len(found) > 1 else ""
    where = f"{place} (corpus {name})" if place else f"corpus {name}"
    raise InputDataError(f"{where}: {problem}{more}; {advice}")
