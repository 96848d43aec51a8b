"""The product answerer: a generic interrogative-frame stripper, then the same mechanisms.

It stands in for the product's aggregation route, so it is written the way a product
parser has to be: knowing nothing of how the synthetic generator words its questions.
It shares no parsing code with :mod:`harness.answers.reference` (a test reads both
modules' imports); the comparison between the two means something only because of that.

The rules, in order:

1. drop trailing sentence punctuation; find a month and year anywhere (full or
   three-letter month names, or ``YYYY-MM``) and cut it out with a preposition before it;
2. classify by the interrogative frame: ``who`` / ``which|what person|people|...`` with
   ``most`` -> the top attendee; ``how often`` / ``how many times`` / ``number of times``
   -> an occurrence count; ``how many`` / ``number of`` followed by a meeting noun -> a
   file count (with a period: a period-filtered file count); ``which`` / ``what`` /
   ``list`` / ``show`` ... a meeting noun, or ``in which`` -> a file list;
3. the subject is a noun phrase: it starts at the first determiner that does not
   introduce a meeting noun ("the meetings", "our sessions" are frame, not subject) and
   runs to the end, less trailing verbs of mention ("came up", "discussed") and a
   leading article; with no determiner, it is what follows the last verb of mention;
4. for the top attendee: the qualifier between ``most`` and a meeting noun is the
   session kind, the name after the next preposition is the team.

Anything it cannot fill is declined with the reason.
"""

from __future__ import annotations

import calendar
import re
from typing import Final

from harness.answers.mechanisms import MECHANISMS, Sources, execute
from harness.answers.model import Answer, Intent, declined

_MONTH_NUMBERS: Final[dict[str, int]] = {
    **{calendar.month_name[i].casefold(): i for i in range(1, 13)},
    **{calendar.month_abbr[i].casefold(): i for i in range(1, 13)},
}
_PERIOD_WORDS: Final = re.compile(
    r"(?:\b(?:in|during|from|for|throughout|over)\s+)?"
    r"(?:\b(?P<name>[A-Za-z]{3,9})\.?\s+(?P<year>\d{4})\b|\b(?P<iso_year>\d{4})-(?P<iso_month>\d{2})\b)"
    r"\s*,?", re.IGNORECASE)
_TOKEN: Final = re.compile(r"[^\s,;:!?]+")

_MEETING_NOUNS: Final = frozenset({"meeting", "meetings", "session", "sessions", "recording", "recordings",
                                   "call", "calls", "transcript", "transcripts", "times", "time"})
# "this"/"that" are left out: in a question they are more often pronouns ("meetings that discussed X")
_DETERMINERS: Final = frozenset({"the", "a", "an", "our", "my", "your", "their", "any"})
_ARTICLES: Final = frozenset({"the", "a", "an"})
_MENTION_TAIL: Final = frozenset({"came", "come", "up", "discussed", "mentioned", "raised", "covered",
                                  "brought", "talked", "about", "was", "were", "is", "are", "been", "get", "got"})
_MENTION_VERBS: Final = frozenset({"mention", "mentions", "mentioned", "discuss", "discusses", "discussed",
                                   "about", "up", "cover", "covers", "covered", "raise", "raised", "on"})
_PERSON_NOUNS: Final = frozenset({"person", "people", "speaker", "speakers", "attendee", "attendees",
                                  "participant", "participants", "member", "members", "one"})
_PREPOSITIONS: Final = frozenset({"for", "of", "in", "with", "by", "at", "on"})
_LIST_OPENERS: Final = frozenset({"which", "what", "list", "show", "name", "find"})


def _find_period(text: str) -> tuple[str, int | None, int | None]:
    """(text without the period, year, month), or the text unchanged and Nones."""
    for match in _PERIOD_WORDS.finditer(text):
        if match.group("iso_year"):
            year, month = int(match.group("iso_year")), int(match.group("iso_month"))
            if not 1 <= month <= 12:
                continue
        else:
            number = _MONTH_NUMBERS.get(match.group("name").casefold())
            if number is None:
                continue
            year, month = int(match.group("year")), number
        rest = (text[:match.start()] + " " + text[match.end():]).strip()
        return rest, year, month
    return text, None, None


def _contains(words: list[str], *sequence: str) -> bool:
    n = len(sequence)
    return any(tuple(words[i:i + n]) == sequence for i in range(len(words) - n + 1))


def _meeting_noun_after(lower: list[str], phrase: tuple[str, ...], within: int = 3) -> bool:
    """Whether ``phrase`` occurs and a meeting noun follows it within ``within`` words."""
    n = len(phrase)
    for i in range(len(lower) - n + 1):
        if tuple(lower[i:i + n]) == phrase and any(w in _MEETING_NOUNS for w in lower[i + n:i + n + within]):
            return True
    return False


def _subject(tokens: list[str]) -> str | None:
    lower = [t.casefold() for t in tokens]
    start = None
    for i, word in enumerate(lower):
        if word in _DETERMINERS and i + 1 < len(lower) and lower[i + 1] not in _MEETING_NOUNS:
            start = i
            break
    if start is None:  # no determiner: what follows the last verb of mention
        verbs = [i for i, word in enumerate(lower) if word in _MENTION_VERBS]
        if not verbs:
            return None
        start = verbs[-1] + 1
    end = len(tokens)
    while end > start and lower[end - 1] in _MENTION_TAIL:
        end -= 1
    if end > start + 1 and lower[start] in _ARTICLES:
        start += 1
    words = tokens[start:end]
    return " ".join(words) if words else None


def _attendee_scope(tokens: list[str]) -> tuple[str | None, str | None]:
    """(kind, team) from '... most <kind> <meeting noun> <preposition> <team>'."""
    lower = [t.casefold() for t in tokens]
    if "most" not in lower:
        return None, None
    after = lower.index("most") + 1
    nouns = [i for i in range(after, len(lower)) if lower[i] in _MEETING_NOUNS]
    if not nouns:
        return None, None
    noun = nouns[0]
    kind_words = [t for t in tokens[after:noun] if t.casefold() not in _ARTICLES]
    team_words = tokens[noun + 1:]
    if team_words and team_words[0].casefold() in _PREPOSITIONS:
        team_words = team_words[1:]
    team_words = [t for t in team_words if t.casefold() not in _ARTICLES]
    if team_words and team_words[-1].casefold() in {"team", "group", "squad"}:
        team_words = team_words[:-1]
    return (" ".join(kind_words) or None), (" ".join(team_words) or None)


def parse(question: str) -> Intent | str:
    """An intent, or the reason none could be formed."""
    text = question.strip().rstrip("?.! ")
    text, year, month = _find_period(text)
    tokens = _TOKEN.findall(text)
    lower = [t.casefold() for t in tokens]
    if not tokens:
        return "empty question"
    asks_person = lower[0] == "who" or (
        lower[0] in {"which", "what"} and len(lower) > 1 and lower[1] in _PERSON_NOUNS)
    if asks_person:
        if "most" not in lower:
            return "a who-question without 'most': no aggregation asked for"
        kind, team = _attendee_scope(tokens)
        if kind is None or team is None:
            return "who-attended-most frame without a '<kind> sessions for <team>' scope"
        return Intent(name="speaker_top", kind=kind, team=team)
    phrase = _subject(tokens)
    if phrase is None:
        return "no subject noun phrase after the interrogative frame"
    if _contains(lower, "how", "often") or _contains(lower, "how", "many", "times") \
            or _contains(lower, "number", "of", "times"):
        if year is not None:
            return "a period-filtered occurrence count has no mechanism"
        return Intent(name="count_events", phrase=phrase)
    if _meeting_noun_after(lower, ("how", "many")) or _meeting_noun_after(lower, ("number", "of")):
        if year is not None:
            return Intent(name="temporal_count", phrase=phrase, year=year, month=month)
        return Intent(name="count_files", phrase=phrase)
    opens_list = lower[0] in _LIST_OPENERS and any(w in _MEETING_NOUNS for w in lower[1:3])
    if opens_list or _meeting_noun_after(lower, ("in", "which")):
        if year is not None:
            return "a period-filtered file list has no mechanism"
        return Intent(name="list_files", phrase=phrase)
    return "no interrogative frame (how many / how often / which / list / who ... most)"


class ProductAnswerer:
    name = "product"
    # A stand-in for the product's route, not the product: nothing here is on a chat path.
    is_production_path = False
    parser = ("generic interrogative-frame stripper: month-year detection, frame classification "
              "(who/which-person + most, how often/how many times, how many, which/list), subject noun "
              "phrase by determiner and trailing-verb rules; shares no code with the reference parser")

    def __init__(self, sources: Sources) -> None:
        self.sources = sources

    def mechanisms(self) -> dict[str, str]:
        return {intent: mechanism for intent, mechanism in MECHANISMS.items()}

    def answer(self, question: str) -> Answer:
        intent = parse(question)
        if isinstance(intent, str):
            return declined(intent)
        return execute(intent, self.sources)
