"""The methodology's numbers, as transcribed into ``methodology_tables.json``.

Each value is kept as printed (``"−0.0003"``, ``"1,576"``, ``"62.5%"``, ``"12.1×"``, ``"split"``)
with the line of ``reference/methodology.txt`` it is printed on, so a test can find every one
of them there. :func:`parse_value` turns the printed text into what is compared: a number
(a percent as a fraction, so one threshold serves every column), or a word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from harness.inputfiles import parse_json_input, validate_input

TABLES_FILE = "methodology_tables.json"
_NUMBER = re.compile(r"^[+\-−]?\d[\d,]*(?:\.\d+)?[%×]?$")


class MethodologyRow(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    key: StrictStr
    line: StrictInt = Field(ge=1)
    values: dict[StrictStr, StrictStr]
    label: StrictStr | None = None


class MethodologyTable(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    id: StrictStr
    title: StrictStr
    columns: list[StrictStr]
    rows: list[MethodologyRow]

    @property
    def lines(self) -> tuple[int, int]:
        numbers = [r.line for r in self.rows]
        return min(numbers), max(numbers)

    def row(self, key: str) -> MethodologyRow | None:
        return next((r for r in self.rows if r.key == key), None)


class MethodologyTables(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    schema_: Literal["ragsweep.methodology-tables/1"] = Field(alias="schema")
    source: StrictStr
    note: StrictStr
    tables: list[MethodologyTable]

    def table(self, table_id: str) -> MethodologyTable:
        for table in self.tables:
            if table.id == table_id:
                return table
        raise KeyError(table_id)


@dataclass(frozen=True)
class Value:
    """A printed value: ``number`` when it is one (percent as a fraction), else ``word``."""

    text: str
    number: float | None
    kind: Literal["number", "percent", "ratio", "word"]
    decimals: int

    @property
    def word(self) -> str:
        return self.text


def parse_value(text: str) -> Value:
    cleaned = text.strip()
    if not _NUMBER.match(cleaned):
        return Value(text=cleaned, number=None, kind="word", decimals=0)
    kind: Literal["number", "percent", "ratio"] = "number"
    digits = cleaned.replace("−", "-").replace(",", "")
    if digits.endswith("%"):
        kind, digits = "percent", digits[:-1]
    elif digits.endswith("×"):
        kind, digits = "ratio", digits[:-1]
    decimals = len(digits.partition(".")[2])
    number = float(digits) / (100.0 if kind == "percent" else 1.0)
    return Value(text=cleaned, number=number, kind=kind, decimals=decimals)


def numbers_on(line: str) -> list[str]:
    """Every number printed on a line, as printed (what a transcribed value must be one of)."""
    return re.findall(r"[+\-−]?\d[\d,]*(?:\.\d+)?[%×]?", line)


def tables_text() -> str:
    return resources.files("harness.reproduction").joinpath(TABLES_FILE).read_text(encoding="utf-8")


@cache
def load_tables() -> MethodologyTables:
    where = f"harness/reproduction/{TABLES_FILE}"
    return validate_input(MethodologyTables, parse_json_input(tables_text(), where), where)
