"""A committed control checked like a two-click reproduction: expected scores, re-derived and compared.

``baselines/<name>/expected.json`` (:class:`ExpectedDoc`) holds the stage-1 scores of one corpus (every
class, every measure the run reports, and ``n``), the exact commands that derive them, the state they were
derived on (its identity, and its claim: corpora with their checksums, chunking, the index with its
embedding model) and a tolerance. :func:`rule_for` decides how a state is compared with it:

* the **same identity** (same bits): every cell must be exactly equal; any difference is a code change;
* **another identity with the same claim** (the same corpora, chunking and model, other vector bits:
  another machine's encoder, docs/states.md): every cell within the file's tolerance;
* **another claim**: not comparable, refused (exit 5) with one line naming what differs, before any run.

:func:`run_commands` runs the file's commands into a scratch folder (``WORK_MARKER``; never var/bench),
:func:`compare_cells` names every moved cell, :func:`derive_doc` writes a new expected.json (a deliberate
re-baseline).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from harness.errors import HarnessError, IntegrityError, UsageError
from harness.inputfiles import read_json_input, validate_input
from harness.outputfiles import check_writable
from harness.report.results import read_metrics
from harness.state import read_manifest, verified_identity

SCHEMA = "ragsweep.reproduction-control/1"
WORK_MARKER = ".ragsweep-reproduction-check-work"  # what makes a folder the check's scratch, emptied by the next
CLAIM_KEYS = ("corpora", "chunking", "index")  # what decides an embedded bench's numbers, besides the bits
# The band between two machines' encoders (docs/states.md: QMSum control nDCG@10 0.0918 against 0.0916,
# synthetic identical): 0.001 is five times the largest move measured, and a tenth of the 0.01 a
# reproduction difference must pass to need an explanation (docs/sweeps.md).
OTHER_IDENTITY_TOLERANCE = 0.001
PER_MEASURE_TOLERANCE = {"n": 0.0, "fileRank": 1.0}
TOLERANCE_WHY = (
    "Same identity: tolerance 0, same bits give the same scores, so any difference is a code change. "
    "Another identity with the same claim (another machine's encoder: the vectors' last bits, docs/states.md): "
    "0.001 per cell, five times the largest move measured between two machines (QMSum control nDCG@10 0.0918 "
    "against 0.0916; synthetic cells identical) and a tenth of the 0.01 a reproduction difference must pass "
    "to need an explanation. n (queries scored) is exact on any identity; fileRank, a median of integer "
    "ranks that moves in steps of 0.5, within one rank.")


class Tolerance(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    other_identity: float = Field(ge=0)
    per_measure: dict[str, float] = Field(default_factory=dict)  # a measure's own, on another identity
    why: StrictStr

    def for_measure(self, measure: str) -> float:
        return self.per_measure.get(measure, self.other_identity)


class DerivedOn(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    path: StrictStr  # where it was, for a reader; never compared
    identity: StrictStr
    claim: dict[str, Any]
    encoder_numerics: dict[str, Any] | None = None  # build.json: what decided the vectors' bits there


class ExpectedRun(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    scope: StrictStr
    command: list[StrictStr]  # {state}, {work}, {workers} filled in; "ragsweep" is this Python's harness
    metrics: StrictStr  # the metrics.json the command writes
    cells: dict[str, dict[str, StrictInt | float]]  # query class -> measure (and n) -> value


class ExpectedDoc(BaseModel):
    """expected.json."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    schema_: Literal["ragsweep.reproduction-control/1"] = Field(alias="schema")
    name: StrictStr
    why: StrictStr
    corpus: StrictStr
    state: DerivedOn
    tolerance: Tolerance
    runs: list[ExpectedRun]


def read_expected(path: Path) -> ExpectedDoc:
    doc = read_json_input(path)
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise UsageError(f"--expected {path}: field schema: expected {SCHEMA!r}, got {got!r}; not a "
                         "reproduction control's expected.json")
    return validate_input(ExpectedDoc, doc, str(path))


# -- which rule: the state's identity and claim against the file's ---------------------------------------

def state_claim(manifest: Mapping[str, Any]) -> dict[str, Any]:
    return {key: manifest.get(key) for key in CLAIM_KEYS}


def _flatten(value: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for key in sorted(value):
            _flatten(value[key], f"{path}.{key}" if path else str(key), out)
    elif isinstance(value, list) and all(isinstance(v, Mapping) and "name" in v for v in value):
        for v in value:  # corpora: by name, so one corpus more or less is named as such
            _flatten({k: x for k, x in v.items() if k != "name"}, f"{path}[{v['name']}]", out)
            out[f"{path}[{v['name']}]"] = "present"
    else:
        out[path] = value


def claim_differences(expected: Mapping[str, Any], got: Mapping[str, Any]) -> list[str]:
    """Each field where the claims differ, as ``path: VALUE, expected VALUE``."""
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    _flatten(expected, "", a)
    _flatten(got, "", b)

    def show(v: Any) -> str:
        text = "absent" if v is None else str(v)
        return text if len(text) <= 44 else text[:40] + "..."  # a model name whole, a digest's first 40

    return [f"{k}: {show(b.get(k))}, expected {show(a.get(k))}"
            for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


@dataclass(frozen=True)
class Rule:
    same_identity: bool
    line: str  # what the check prints: which rule, and why

    def tolerance(self, doc: ExpectedDoc, measure: str) -> float:
        return 0.0 if self.same_identity else doc.tolerance.for_measure(measure)

    def words(self) -> str:
        return "on the same identity" if self.same_identity else "on another identity"


def rule_for(doc: ExpectedDoc, state: Path, where: str) -> Rule:
    """The rule for ``state`` (verified first: exit 5 naming a changed file); another claim is refused."""
    identity = verified_identity(state)
    claim = state_claim(read_manifest(state))
    differences = claim_differences(doc.state.claim, claim)
    if differences:
        more = f" (and {len(differences) - 1} more)" if len(differences) > 1 else ""
        raise IntegrityError(f"--state {state}: not comparable with {where}, derived on another claim: "
                             f"{differences[0]}{more}; check on a state of the same corpora, chunking and "
                             "embedding model, or re-derive on purpose with --derive")
    if identity == doc.state.identity:
        return Rule(True, f"state {state}: identity {identity[:12]}, the one {where} was derived on: "
                          "exact rule (every cell equal, tolerance 0)")
    numerics = _numerics(state)
    why = f"; encoder {numerics}, derived with {doc.state.encoder_numerics}" if numerics else ""
    return Rule(False, f"state {state}: identity {identity[:12]}, derived on {doc.state.identity[:12]}, same claim "
                       f"(other vector bits){why}: tolerance rule (each cell within "
                       f"{doc.tolerance.other_identity:g}; {_per_measure(doc.tolerance)})")


def _per_measure(tolerance: Tolerance) -> str:
    return ", ".join(f"{m} {'exact' if t == 0 else f'within {t:g}'}" for m, t in sorted(tolerance.per_measure.items()))


def _numerics(state: Path) -> dict[str, Any] | None:
    try:
        record = json.loads((state / "build.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    numerics = record.get("encoder_numerics") if isinstance(record, dict) else None
    return numerics if isinstance(numerics, dict) else None


# -- the runs ------------------------------------------------------------------------------------------

def prepare_work(work: Path) -> None:
    """Empty the scratch folder ``work`` (only one holding WORK_MARKER, or a new or empty one)."""
    if work.exists() and not (work / WORK_MARKER).is_file() and (not work.is_dir() or any(work.iterdir())):
        raise UsageError(f"--work {work}: not the check's scratch folder (no {WORK_MARKER}), so it is not "
                         "emptied; choose another --work (never var/bench), or empty it yourself")
    check_writable(work, "--work")
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    (work / WORK_MARKER).write_text("scratch of `ragsweep report reproduction-check`: emptied by the next one\n",
                                    encoding="utf-8")


def fill(text: str, *, state: Path, work: Path, workers: int) -> str:
    return text.replace("{state}", str(state)).replace("{work}", str(work)).replace("{workers}", str(workers))


def run_commands(runs: Sequence[ExpectedRun], *, state: Path, work: Path, workers: int,
                 corpus: str) -> dict[str, dict[str, dict[str, int | float]]]:
    """Run each command (into ``work``, emptied first); scope -> class -> measure -> value of ``corpus``."""
    prepare_work(work)
    got: dict[str, dict[str, dict[str, int | float]]] = {}
    for run in runs:
        argv = [fill(a, state=state, work=work, workers=workers) for a in run.command]
        command = [sys.executable, "-m", "harness", *argv[1:]] if argv[:1] == ["ragsweep"] else argv
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
            error = HarnessError(f"scope {run.scope}: `{' '.join(argv)}` exited {done.returncode}: {tail[0]}")
            error.exit_code = done.returncode  # the command's own documented code, passed on
            raise error
        path = Path(fill(run.metrics, state=state, work=work, workers=workers))
        metrics = read_metrics(read_json_input(path), str(path))
        got[run.scope] = {row.query_class: {"n": row.n, **row.metrics} for row in metrics.rows if row.corpus == corpus}
    return got


# -- the comparison -------------------------------------------------------------------------------------

def _show(value: float, other: float) -> str:
    if isinstance(value, int) and isinstance(other, int):
        return str(value)  # n, a count
    if f"{value:.4f}" != f"{other:.4f}":
        return f"{value:.4f}"
    return repr(value)  # equal to four places: every digit, so the difference is visible


def _delta(d: float) -> str:
    if isinstance(d, int):
        return f"{d:+d}"
    return f"{d:+.4f}" if abs(d) >= 0.00005 else f"{d:+.1e}"


@dataclass(frozen=True)
class ScopeVerdict:
    scope: str
    checked: int  # cells compared
    moved: tuple[str, ...]  # one line per moved, missing or unexpected cell


def compare_cells(doc: ExpectedDoc, got: Mapping[str, Mapping[str, Mapping[str, float]]],
                  rule: Rule) -> list[ScopeVerdict]:
    """Every cell of every run of ``doc`` against ``got`` (scope -> class -> measure -> value) under ``rule``."""
    verdicts = []
    for run in doc.runs:
        count, moved = 0, []
        derived = got.get(run.scope, {})
        for query_class in sorted(set(run.cells) | set(derived)):
            where = f"scope {run.scope}, class {query_class}"
            want, have = run.cells.get(query_class), derived.get(query_class)
            if want is None or have is None:
                moved.append(f"{where}: {'not in the expected file' if want is None else 'not produced by the run'}")
                continue
            for measure in sorted(set(want) | set(have)):
                count += 1
                if measure not in want or measure not in have:
                    moved.append(f"{where}, {measure}: "
                                 f"{'not in the expected file' if measure not in want else 'not reported by the run'}")
                    continue
                expected, value = want[measure], have[measure]
                tolerance = rule.tolerance(doc, measure)
                if expected != value and not abs(value - expected) <= tolerance:
                    moved.append(f"{where}, {measure}: expected {_show(expected, value)}, got {_show(value, expected)} "
                                 f"({_delta(value - expected)}, tolerance {tolerance:g} {rule.words()})")
        verdicts.append(ScopeVerdict(run.scope, count, tuple(moved)))
    return verdicts


# -- a deliberate re-baseline -----------------------------------------------------------------------------

def derive_doc(template: ExpectedDoc, got: Mapping[str, Mapping[str, Mapping[str, int | float]]], state: Path,
               derived_on: str) -> dict[str, Any]:
    """``template`` (its name, why, corpus, commands, tolerance) with the cells ``got`` on ``state``."""
    manifest = read_manifest(state)
    doc = template.model_dump(by_alias=True)
    doc["state"] = {"path": derived_on, "identity": verified_identity(state), "claim": state_claim(manifest),
                    "encoder_numerics": _numerics(state)}
    for run in doc["runs"]:
        run["cells"] = {c: dict(sorted(m.items())) for c, m in sorted(got.get(run["scope"], {}).items())}
    return doc


def _scope_run(scope: str) -> ExpectedRun:
    # the runs `make scopes` makes (the methodology's stage-1 table), into the check's own folder
    return ExpectedRun(scope=scope, command=["ragsweep", "bench", "--state", "{state}", "--corpus", "qmsum",
                                             "--scope", scope, "--workers", "{workers}", "--control-name",
                                             f"scope-{scope}", "--out", f"{{work}}/scope-{scope}"],
                       metrics=f"{{work}}/scope-{scope}/metrics.json", cells={})


def stage1_control() -> ExpectedDoc:
    """What ``--derive`` writes, before its cells and state: the QMSum stage-1 control."""
    return ExpectedDoc(
        schema_=SCHEMA, name="qmsum-stage1-control", corpus="qmsum",
        why="the methodology's stage-1 table on QMSum: the default arm (stage retrieve, size 48, RRF rank "
            "constant 30) at --scope corpus (what a user gets) and --scope gold-files (the oracle upper bound), "
            "the runs `make scopes` makes; re-derived and compared by `make reproduction-check`",
        state=DerivedOn(path="", identity="", claim={}),
        tolerance=Tolerance(other_identity=OTHER_IDENTITY_TOLERANCE, per_measure=dict(PER_MEASURE_TOLERANCE),
                            why=TOLERANCE_WHY),
        runs=[_scope_run("corpus"), _scope_run("gold-files")])
