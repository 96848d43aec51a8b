"""Why a number differs from the methodology's: sentences keyed by table, row and column.

``explanations.json`` holds them as data, apart from the code that builds the tables. Each
entry names the tables, rows and columns it covers as patterns (``*`` is the one wildcard:
``*`` for any, ``synthetic*`` for every synthetic column; ``[`` is literal, as in
``queries[lookup]``) and one sentence saying what differs and why. An
entry may cite values from the results (``cites: ["index_documents"]``): those the results
read carry are appended to the sentence as ours, the others are left out.

A differing cell gets the most specific entry that covers it: an exact row beats a pattern,
which beats ``*``; then the same for the column, then the table; a tie goes to the first in
the file. A cell no entry covers is *unexplained*, and the page says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from harness.inputfiles import parse_json_input, validate_input

EXPLANATIONS_FILE = "explanations.json"


class Explanation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    id: StrictStr = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    tables: list[StrictStr] = Field(min_length=1)
    rows: list[StrictStr] = Field(default_factory=lambda: ["*"], min_length=1)
    columns: list[StrictStr] = Field(default_factory=lambda: ["*"], min_length=1)
    why: StrictStr = Field(min_length=1)
    cites: list[StrictStr] = Field(default_factory=list)


class Explanations(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    schema_: Literal["ragsweep.reproduction-explanations/1"] = Field(alias="schema")
    explanations: list[Explanation]


@dataclass(frozen=True)
class Chosen:
    id: str
    text: str


def explanations_text() -> str:
    return resources.files("harness.reproduction").joinpath(EXPLANATIONS_FILE).read_text(encoding="utf-8")


@cache
def load_explanations() -> Explanations:
    where = f"harness/reproduction/{EXPLANATIONS_FILE}"
    return validate_input(Explanations, parse_json_input(explanations_text(), where), where)


def matches(pattern: str, value: str) -> bool:
    """``*`` matches any run of characters; everything else is literal."""
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("*")), value) is not None


def _score(patterns: list[str], value: str) -> int:
    """2: named exactly; 1: a pattern matched; 0: only ``*``; -1: no match."""
    best = -1
    for pattern in patterns:
        if pattern == value:
            best = max(best, 2)
        elif pattern == "*":
            best = max(best, 0)
        elif matches(pattern, value):
            best = max(best, 1)
    return best


def explain(explanations: Explanations, table: str, row: str, column: str) -> Explanation | None:
    best: tuple[tuple[int, int, int], Explanation] | None = None
    for entry in explanations.explanations:
        score = (_score(entry.rows, row), _score(entry.columns, column), _score(entry.tables, table))
        if min(score) < 0:
            continue
        if best is None or score > best[0]:
            best = (score, entry)
    return None if best is None else best[1]


def fill(entry: Explanation, facts: Mapping[str, str]) -> str:
    """The sentence, then the cited values the results carry: ``... (ours: index_files 432).``"""
    cited = [f"{name} {facts[name]}" for name in entry.cites if name in facts]
    if not cited:
        return entry.why
    return f"{entry.why.rstrip('.')} (ours: {', '.join(cited)})."
