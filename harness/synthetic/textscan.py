"""Where planted phrases occur in written text, found by reading the text (not the plan).

Matching is the store's (harness.store.phrases, docs/store.md): case-insensitive,
whitespace inside a phrase matches any whitespace run, whole words at both ends,
non-overlapping occurrences counted per turn. The store is a later stage and is not
imported here; a test checks that both agree on generated text.

Scanning every phrase over every turn would be phrases x turns regex calls. Instead every
phrase beginning with "the" is found from the "the <word>" positions of each turn (one
pass over the corpus), and any other phrase (a lookup fact) is counted only in the turns
holding a "the" phrase it contains; a phrase with no such anchor is scanned everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from harness.synthetic import vocab
from harness.synthetic.formats import NativeMeeting

_THE = re.compile(r"(?<!\w)the(?=\s+(\w+)(?:\s+(\w+))?(?:\s+(\w+))?)", re.IGNORECASE)
_WORD = re.compile(r"\w+")
KEY_WORDS = 3  # "the" phrases are indexed by up to three words after "the"
CODENAME_WORDS: tuple[str, ...] = (*vocab.CODENAME_A, *vocab.CODENAME_B)
_CODENAME_SET = frozenset(w.lower() for w in CODENAME_WORDS)

Place = tuple[str, int]  # (meeting_id, turn index)


@cache
def phrase_regex(phrase: str, *, exact_case: bool = False) -> re.Pattern[str]:
    words = phrase.split()
    body = r"\s+".join(re.escape(w) for w in words)
    head = r"(?<!\w)" if re.match(r"\w", words[0]) else ""
    tail = r"(?!\w)" if re.search(r"\w$", words[-1]) else ""
    return re.compile(head + body + tail, 0 if exact_case else re.IGNORECASE)


def count_in(phrase: str, text: str, *, exact_case: bool = False) -> int:
    return len(phrase_regex(phrase, exact_case=exact_case).findall(text))


@dataclass(frozen=True)
class Occurrences:
    """phrase -> {(meeting_id, turn): count}, for every phrase asked about."""

    places: dict[str, dict[Place, int]]

    def of(self, phrase: str) -> dict[Place, int]:
        return self.places.get(phrase, {})

    def files(self, phrase: str) -> list[str]:
        return sorted({meeting_id for meeting_id, _ in self.of(phrase)})

    def total(self, phrase: str) -> int:
        return sum(self.of(phrase).values())


def _key(phrase: str) -> tuple[str, ...] | None:
    """Up to three lower-cased words after a leading "the", or None."""
    words = phrase.split()
    if len(words) < 2 or words[0].lower() != "the" or not all(re.fullmatch(r"\w+", w) for w in words[1:2]):
        return None
    key = []
    for w in words[1 : 1 + KEY_WORDS]:
        if not re.fullmatch(r"\w+", w):
            break
        key.append(w.lower())
    return tuple(key)


class _Index:
    """"the" phrases by their key words, to find candidates at each "the" of a text."""

    def __init__(self, phrases: list[str]) -> None:
        self.by_key: dict[tuple[str, ...], list[str]] = {}
        for phrase in phrases:
            key = _key(phrase)
            if key is not None:
                self.by_key.setdefault(key, []).append(phrase)
        self.first_words = frozenset(key[0] for key in self.by_key)
        self.lengths = sorted({len(key) for key in self.by_key})

    def candidates(self, text: str) -> set[str]:
        found: set[str] = set()
        for match in _THE.finditer(text):
            first = match.group(1).lower()
            if first not in self.first_words:
                continue
            words = [first, *(g.lower() for g in match.groups()[1:] if g)]
            for length in self.lengths:
                if length <= len(words):
                    found.update(self.by_key.get(tuple(words[:length]), ()))
        return found


def scan(meetings: Sequence[NativeMeeting], phrases: Iterable[str]) -> Occurrences:
    wanted = sorted({p for p in phrases if p.split()})
    index = _Index([p for p in wanted if _key(p) is not None])
    others = [p for p in wanted if _key(p) is None]

    places: dict[str, dict[Place, int]] = {p: {} for p in wanted}
    for m in meetings:
        for i, turn in enumerate(m.turns):
            text = turn.text
            for phrase in index.candidates(text):
                n = count_in(phrase, text)
                if n:
                    places[phrase][(m.meeting_id, i)] = n

    if others:
        turn_text = {(m.meeting_id, i): t.text for m in meetings for i, t in enumerate(m.turns)}
        for phrase in others:
            anchors = sorted(index.candidates(phrase), key=lambda a: (len(places[a]), a))
            anchors = [a for a in anchors if count_in(a, phrase)]
            # every occurrence of the phrase holds an occurrence of each "the" phrase inside it
            candidates: Iterable[Place] = sorted(places[anchors[0]]) if anchors else sorted(turn_text)
            for place in candidates:
                n = count_in(phrase, turn_text[place])
                if n:
                    places[phrase][place] = n
    return Occurrences(places)


def codename_turns(meetings: Sequence[NativeMeeting]) -> dict[Place, list[str]]:
    """Turns that contain a codename word (any case), with the words found."""
    out: dict[Place, list[str]] = {}
    for m in meetings:
        for i, turn in enumerate(m.turns):
            words = _WORD.findall(turn.text.lower())
            if not _CODENAME_SET.isdisjoint(words):
                out[(m.meeting_id, i)] = [w for w in words if w in _CODENAME_SET]
    return out
