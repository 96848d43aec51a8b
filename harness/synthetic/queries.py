"""Query wording: several templates per class and rule, chosen per query by its own seed.

Aggregation questions keep the five frames of the methodology's reference answerer (R3
"how many meetings mention X", R4 "which meetings mention X", R5 "how many times in total
did we <verb> X", R6 "who attended the most <kind> sessions for <team>", R7 "how many
meetings in <Month YYYY> discussed X"), each in a few wordings; the subject phrase is always
verbatim in the question and never its answer. docs/synthetic.md lists every template.
"""

from __future__ import annotations

import random

from harness.synthetic import vocab
from harness.synthetic.formats import (
    RULE_COUNT_EVENTS,
    RULE_COUNT_FILES,
    RULE_LIST_FILES,
    RULE_SPEAKER_TOP,
    RULE_TEMPORAL,
)

LOOKUP_TEMPLATES: dict[str, tuple[str, ...]] = {
    "deadline": (
        "What is the deadline for {s}?",
        "When did {speaker} say {s} is due?",
        "By what date does {s} have to be done, according to the {team} {kind}?",
    ),
    "budget": (
        "How much budget is there for {s}?",
        "What budget cap did {speaker} give for {s}?",
        "In the {team} {kind}, what was the budget ceiling for {s}?",
    ),
    "owner": (
        "Who is going to own {s}?",
        "According to {speaker}, who takes over {s}?",
        "Who was named as the owner of {s} in the {team} {kind}?",
    ),
    "vendor": (
        "Which vendor did we sign with for {s}?",
        "What supplier did {speaker} say we went with for {s}?",
        "Who is the supplier for {s}, per the {team} {kind}?",
    ),
    "metric": (
        "What did {s} do to the error rate?",
        "According to {speaker}, how far did {s} bring the error rate down?",
        "What error rate did the {team} team reach with {s}?",
    ),
    "risk": (
        "What is the biggest risk with {s}?",
        "What did {speaker} see as the main risk for {s}?",
        "Which risk was raised about {s} in the {team} {kind}?",
    ),
    "headcount": (
        "How many more people does {s} need?",
        "How many extra people did {speaker} ask for on {s}?",
        "What staffing increase was requested for {s} in the {team} {kind}?",
    ),
}

MULTI_FILE_TEMPLATES: tuple[str, ...] = (
    "Across the {kind} sessions for the {team_lower} team, what did we conclude about {t}?",
    "What did the {team} {kind} meetings decide about {t}?",
    "How did the discussion of {t} evolve over the {team} {kind} sessions?",
    "In the meetings {person} attended, what came up about {t}?",
    "Summarise what the {team_lower} team said about {t} across its {kind} sessions.",
    "What was concluded about {t} over several meetings?",
)

# The archive regime (docs/synthetic.md, "Regimes"): a standing item is stated in several sessions of
# one series, so a question names its session the way a person would: the series and its day, or
# the series and two people who were there. Question = cue + ", " + ask.
ARCHIVE_LOOKUP_CUES: dict[str, tuple[str, ...]] = {
    "date": (
        "In the {team} {kind} on {date}",
        "At the {date} {team} {kind}",
        "In the {team} {kind} held on {date}",
    ),
    "roster": (
        "In the {team} {kind} that {p1} and {p2} both attended",
        "At the {team} {kind} where {p1} and {p2} were present",
    ),
}
ARCHIVE_LOOKUP_ASKS: dict[str, tuple[str, ...]] = {
    "deadline": ("what deadline was given for {s}?", "when did {speaker} say {s} is due?"),
    "budget": ("what was the budget cap for {s}?", "what budget did {speaker} give for {s}?"),
    "owner": ("who was named to own {s}?", "who did {speaker} say would take over {s}?"),
    "vendor": ("which vendor did we sign with for {s}?", "what supplier did {speaker} say we went with for {s}?"),
    "metric": ("what error rate did {s} reach?", "how far did {speaker} say {s} cut the error rate?"),
    "risk": ("what was the biggest risk with {s}?", "what did {speaker} see as the main risk for {s}?"),
    "headcount": ("how many more people did {s} need?", "how many extra people did {speaker} ask for on {s}?"),
}
# Multi-file wordings whose cue is the series (team and kind): the archive regime's topics are
# discussed by several series, so a wording without the series would have more than one answer.
SERIES_CUED_MULTI_FILE = (0, 1, 2, 4)

AGGREGATION_TEMPLATES: dict[str, tuple[str, ...]] = {
    RULE_COUNT_FILES: (
        "How many meetings mention {x}?",
        "In how many meetings did anyone bring up {x}?",
        "How many of our meetings talked about {x}?",
    ),
    RULE_LIST_FILES: (
        "Which meetings mention {x}?",
        "List the meetings where {x} came up.",
        "In which meetings was {x} discussed?",
    ),
    RULE_COUNT_EVENTS: (
        "How many times in total did we {v} {x}?",
        "How often, in total, did we {v} {x}?",
        "Across all meetings, how many times did we {v} {x}?",
    ),
    RULE_SPEAKER_TOP: (
        "Who attended the most {kind} sessions for {team}?",
        "Which person came to the most {kind} sessions for {team}?",
        "Who was at the most {kind} sessions for {team}?",
    ),
    RULE_TEMPORAL: (
        "How many meetings in {month} discussed {x}?",
        "In {month}, how many meetings discussed {x}?",
        "How many meetings during {month} mentioned {x}?",
    ),
}


def month_label(month: str) -> str:
    """``"2024-03"`` -> ``"March 2024"``."""
    year, number = month.split("-")
    return f"{vocab.MONTHS[int(number) - 1]} {year}"


def day_label(iso: str) -> str:
    """``"2024-03-12"`` -> ``"12 March 2024"``: how a person names a meeting's day."""
    year, month, day = iso.split("-")
    return f"{int(day)} {vocab.MONTHS[int(month) - 1]} {year}"


def _choose(rng: random.Random, templates: tuple[str, ...], prefix: str) -> tuple[str, str]:
    k = rng.randrange(len(templates))
    return templates[k], f"{prefix}.{k}"


def lookup_text(
    rng: random.Random, fact_type: str, subject: str, speaker: str, team: str, kind: str
) -> tuple[str, str]:
    template, template_id = _choose(rng, LOOKUP_TEMPLATES[fact_type], f"lookup.{fact_type}")
    return template.format(s=subject, speaker=speaker, team=team, kind=kind), template_id


def archive_lookup_text(
    rng: random.Random, fact_type: str, subject: str, speaker: str, team: str, kind: str,
    cue: str, date: str, pair: tuple[str, str] | None,
) -> tuple[str, str]:
    """A lookup cued by date (``cue == "date"``) or by two attendees (``"roster"``, ``pair``)."""
    c = rng.randrange(len(ARCHIVE_LOOKUP_CUES[cue]))
    a = rng.randrange(len(ARCHIVE_LOOKUP_ASKS[fact_type]))
    p1, p2 = pair or ("", "")
    head = ARCHIVE_LOOKUP_CUES[cue][c].format(team=team, kind=kind, date=date, p1=p1, p2=p2)
    ask = ARCHIVE_LOOKUP_ASKS[fact_type][a].format(s=subject, speaker=speaker)
    return f"{head}, {ask}", f"lookup.archive.{fact_type}.{cue}.{c}.{a}"


def multi_file_text(rng: random.Random, topic: str, team: str, kind: str, person: str,
                    series_cued: bool = False) -> tuple[str, str]:
    if series_cued:
        k = SERIES_CUED_MULTI_FILE[rng.randrange(len(SERIES_CUED_MULTI_FILE))]
        template, template_id = MULTI_FILE_TEMPLATES[k], f"multi_file.{k}"
    else:
        template, template_id = _choose(rng, MULTI_FILE_TEMPLATES, "multi_file")
    text = template.format(t=topic, team=team, team_lower=team.lower(), kind=kind, person=person)
    return text, template_id


def aggregation_text(
    rng: random.Random,
    rule: str,
    *,
    phrase: str | None = None,
    verb: str | None = None,
    team: str | None = None,
    kind: str | None = None,
    month: str | None = None,
) -> tuple[str, str]:
    template, template_id = _choose(rng, AGGREGATION_TEMPLATES[rule], f"aggregation.{rule}")
    text = template.format(
        x=phrase, v=verb, team=team, kind=kind, month=month_label(month) if month else None
    )
    return text, template_id
