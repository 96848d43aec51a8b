"""comparison.json's model: what the collector writes and what every reader may rely on.

The collector builds the document as plain dicts (``collect.build_comparison``) and checks it
against :class:`ComparisonDoc` before writing, as the report stage does for metrics.json; a
reader (the reproduction page) reads through :func:`read_comparison`, so a malformed or
foreign file is one line naming the file and the field (exit 4). The models never change a
byte of the file. A block a later collector adds rides beside (``extra="allow"``).

Schema 2 (the gate as data): the ``gate`` block is the manifest's GateSpec with its rule, cells
count the queries improved / tied / worsened, arms carry ``hinges_on`` (and ``latency_gate`` when
a latency budget is set). Schema 1 files still read: the fields 2 added are optional here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from harness.errors import InputDataError
from harness.inputfiles import validate_input

COMPARISON_SCHEMA = "ragsweep.comparison/2"
READABLE_SCHEMAS = ("ragsweep.comparison/1", COMPARISON_SCHEMA)


class _Block(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True)


class Cell(_Block):
    """One corpus x class x measure of an arm (or a contrast) against its baseline."""

    corpus: StrictStr
    query_class: StrictStr
    measure: StrictStr
    control: float
    arm: float
    delta: float
    n_control: StrictInt
    n_arm: StrictInt
    n_matched: StrictInt
    counts_match: StrictBool
    per_query_identical: StrictBool
    mean_paired_delta: float | None
    p: float | None
    p_method: StrictStr
    p_holm: float | None
    ci: list[float] | None
    improved: StrictInt | None = None  # schema 2: matched queries the arm moved up / left / moved down
    tied: StrictInt | None = None
    worsened: StrictInt | None = None


class ArmEntry(_Block):
    arm: StrictStr
    axis: StrictStr
    status: StrictStr
    instrument_control: StrictBool
    cells: list[Cell]
    verdict: StrictStr
    why: StrictStr
    significant_on: list[StrictStr] = Field(default_factory=list)
    hinges_on: list[StrictStr] = Field(default_factory=list)  # schema 2: cells within the gate's tolerance
    latency_gate: StrictStr | None = None  # schema 2: a quality win whose latency verdict is in this file


class Contrast(_Block):
    arm: StrictStr
    baseline: StrictStr
    cells: list[Cell]
    skipped: StrictStr | None = None


class StatusEntry(_Block):
    arm: StrictStr
    axis: StrictStr
    status: StrictStr
    detail: StrictStr


class FamilyEntry(_Block):
    name: StrictStr
    control: StrictStr
    control_status: StatusEntry | None
    description: StrictStr
    needs_reranker: StrictBool
    arms: list[ArmEntry]
    contrasts: list[Contrast]
    winner: dict[str, Any]
    missing: list[StatusEntry]
    failed: list[StatusEntry]
    checks: dict[str, Any]

    def arm_entry(self, name: str) -> ArmEntry | None:
        return next((a for a in self.arms if a.arm == name), None)


class ComparisonDoc(_Block):
    schema_: Literal["ragsweep.comparison/1", "ragsweep.comparison/2"] = Field(alias="schema")
    sweep_id: StrictStr
    corpora: list[StrictStr]
    single_corpus: StrictBool
    gate: dict[str, Any]
    measures: list[StrictStr]
    statistics: dict[str, Any]
    families: list[FamilyEntry]
    plot: StrictStr | None = None

    def family(self, name: str) -> FamilyEntry | None:
        return next((f for f in self.families if f.name == name), None)


def read_comparison(doc: Any, where: str) -> ComparisonDoc:
    """A parsed comparison.json (read from ``where``) as :class:`ComparisonDoc`; the first problem
    is one line naming the file and the field (exit 4)."""
    if not isinstance(doc, dict) or doc.get("schema") not in READABLE_SCHEMAS:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        expected = " or ".join(repr(s) for s in READABLE_SCHEMAS)
        raise InputDataError(f"{where}: field schema: expected {expected}, got {got!r}")
    return validate_input(ComparisonDoc, doc, where)
