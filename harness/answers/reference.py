"""The reference answerer: a rules intent parser over the generator's five question frames.

One regular expression per wording in ``harness/synthetic/queries.py``
(``AGGREGATION_TEMPLATES``), written out by hand so that a changed template is a failing
test (tests/test_answers_reference.py renders every template) rather than a silently
widened parser. A question in any other wording is declined, and a declined query scores
zero. The subject phrase is recovered verbatim from the question; it is never the answer.

This is the instrument's control, not the product's answer: ``is_production_path`` is
false. It shares no parsing code with :mod:`harness.answers.product`.
"""

from __future__ import annotations

import re
from typing import Final

from harness.answers.mechanisms import MECHANISMS, Sources, execute
from harness.answers.model import Answer, Intent, IntentName, declined

_MONTH_NAMES: Final = ("January", "February", "March", "April", "May", "June", "July", "August",
                       "September", "October", "November", "December")
_MONTH: Final = r"(?P<month>" + "|".join(_MONTH_NAMES) + r")\s+(?P<year>\d{4})"
_X: Final = r"(?P<phrase>\S.*?)"
_KIND_TEAM: Final = r"(?P<kind>\S.*?)\s+sessions\s+for\s+(?P<team>\S.*?)"


def _frame(pattern: str) -> re.Pattern[str]:
    return re.compile(r"^\s*" + pattern.replace(" ", r"\s+") + r"\s*$", re.IGNORECASE)


# (intent, frame) in the order of AGGREGATION_TEMPLATES; the first full match wins.
FRAMES: Final[tuple[tuple[IntentName, re.Pattern[str]], ...]] = (
    # R3-agg-count-files
    ("count_files", _frame(rf"How many meetings mention {_X}\?")),
    ("count_files", _frame(rf"In how many meetings did anyone bring up {_X}\?")),
    ("count_files", _frame(rf"How many of our meetings talked about {_X}\?")),
    # R4-agg-list-files
    ("list_files", _frame(rf"Which meetings mention {_X}\?")),
    ("list_files", _frame(rf"List the meetings where {_X} came up\.")),
    ("list_files", _frame(rf"In which meetings was {_X} discussed\?")),
    # R5-agg-count-events
    ("count_events", _frame(rf"How many times in total did we (?P<verb>\w+) {_X}\?")),
    ("count_events", _frame(rf"How often, in total, did we (?P<verb>\w+) {_X}\?")),
    ("count_events", _frame(rf"Across all meetings, how many times did we (?P<verb>\w+) {_X}\?")),
    # R6-agg-speaker-top
    ("speaker_top", _frame(rf"Who attended the most {_KIND_TEAM}\?")),
    ("speaker_top", _frame(rf"Which person came to the most {_KIND_TEAM}\?")),
    ("speaker_top", _frame(rf"Who was at the most {_KIND_TEAM}\?")),
    # R7-agg-temporal-count
    ("temporal_count", _frame(rf"How many meetings in {_MONTH} discussed {_X}\?")),
    ("temporal_count", _frame(rf"In {_MONTH}, how many meetings discussed {_X}\?")),
    ("temporal_count", _frame(rf"How many meetings during {_MONTH} mentioned {_X}\?")),
)


def parse(question: str) -> Intent | None:
    """The intent of a question in one of the generator's wordings, else None."""
    for name, frame in FRAMES:
        match = frame.match(question)
        if match is None:
            continue
        groups = {k: v for k, v in match.groupdict().items() if v is not None}
        month = None
        if "month" in groups:
            month = [m.casefold() for m in _MONTH_NAMES].index(groups["month"].casefold()) + 1
        return Intent(name=name, phrase=groups.get("phrase"), verb=groups.get("verb"),
                      team=groups.get("team"), kind=groups.get("kind"),
                      year=int(groups["year"]) if "year" in groups else None, month=month)
    return None


class ReferenceAnswerer:
    name = "reference"
    is_production_path = False
    parser = ("rules intent parser: one regular expression per wording of the generator's five question "
              "frames (harness/synthetic/queries.py); any other wording is declined")

    def __init__(self, sources: Sources) -> None:
        self.sources = sources

    def mechanisms(self) -> dict[str, str]:
        return {intent: mechanism for intent, mechanism in MECHANISMS.items()}

    def answer(self, question: str) -> Answer:
        intent = parse(question)
        if intent is None:
            return declined("the question matches none of the five reference frames")
        return execute(intent, self.sources)
