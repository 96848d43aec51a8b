"""A rules router: query text -> class and the tiers to search. No model.

Classes are tried in a fixed order (aggregation, summarize, multi_file, then lookup);
the first matching rule wins and its name is recorded. ``summarize`` routes to the
digest tier as well as the chunk tier — unless the query carries a quoted phrase: a
digest is selected sentences, a literal phrase can be absent from the digest and
present in the transcript, and answering "not mentioned" from a digest is the silent
wrong answer. The digest leg is recorded beside the ranked list, never merged into it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.model import QueryClass

_RULES: tuple[tuple[QueryClass, str, re.Pattern[str]], ...] = (
    ("aggregation", "count-or-list", re.compile(
        r"^\s*(how many (meetings|sessions|times|recordings)|which (meetings|sessions|recordings)|"
        r"who (attended|joined|spoke at) the most|in how many)\b", re.I)),
    ("summarize", "summary-verb", re.compile(
        r"\b(summari[sz]e|summary|sum up|recap|overview|describe|give me the gist)\b", re.I)),
    ("summarize", "whole-discussion", re.compile(
        r"^\s*what (was|were) (the )?(main )?(discussion|topics?|points?)\b", re.I)),
    ("multi_file", "across-sessions", re.compile(
        r"\b(across|over|throughout) (all |every |the )?(the )?[\w\s-]{0,60}?"
        r"(meetings|sessions|recordings|retrospectives|reviews|syncs|calls)\b", re.I)),
    ("multi_file", "all-my", re.compile(r"\b(in|from) (all|every one) of (my|our|the) ", re.I)),
)
_QUOTED = re.compile(r"[\"“”]([^\"“”]{2,})[\"“”]")


@dataclass(frozen=True)
class Route:
    query_class: QueryClass
    rule: str
    tiers: tuple[str, ...]
    quoted_phrase: bool


def route(text: str) -> Route:
    quoted = bool(_QUOTED.search(text))
    query_class, rule = next(
        ((cls, name) for cls, name, pattern in _RULES if pattern.search(text)), ("lookup", "default")
    )
    tiers: tuple[str, ...] = ("chunk",)
    if query_class == "summarize" and not quoted:
        tiers = ("chunk", "digest")
    return Route(query_class=query_class, rule=rule, tiers=tiers, quoted_phrase=quoted)
