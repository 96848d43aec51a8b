"""The methodology's metric-library table (its lines 108-111), computed here on hand-built inputs.

No results file stands behind it: the three cases are tiny, so each is built as the methodology
describes it and scored live. One query, doc ids ``<file>_0`` (so an id sorts as its file does):

* **graded 3/2/1, nDCG@10**: qrels ``a_0``=3, ``b_0``=2, ``c_0``=1; the run scores ``b_0`` 3.0,
  ``a_0`` 2.0, ``c_0`` 1.0 (the grade-2 document first, then 3, then 1);
* **tie, gold sorts first**: qrels ``a_0``=1; the run scores ``a_0`` and ``b_0`` 1.0 each, so the
  gold document's id sorts first;
* **tie, gold sorts last**: the same run, with qrels ``b_0``=1.

Each library is called as it ordinarily is, nDCG@10 with linear gain: pytrec_eval on the raw
scores (``ndcg_cut.10``); ranx's ``evaluate(..., "ndcg@10")`` with the run inserted in id order;
sklearn's ``ndcg_score(k=10)`` over the run's documents in id order; and ragsweep's own engine
as bench scores a run (:func:`harness.metrics.normalise.normalise_run` at the retrieve stage, then
:func:`harness.metrics.engine.evaluate`). A library that cannot be imported is a Missing cell
saying so: none is a dependency added for this table.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from harness.metrics.engine import evaluate
from harness.metrics.normalise import normalise_run
from harness.model import Qrels, RankedDoc, Run
from harness.reproduction.derive import Missing, Ours, TableOurs
from harness.reproduction.methodology import MethodologyTable

TABLE_ID = "metric-libraries"


@dataclass(frozen=True)
class Case:
    qrels: Mapping[str, int]
    run: Mapping[str, float]  # in id order: the order a dict-ordered library inserts it


TIE_RUN = {"a_0": 1.0, "b_0": 1.0}
CASES: dict[str, Case] = {
    "graded-3-2-1": Case({"a_0": 3, "b_0": 2, "c_0": 1}, {"a_0": 2.0, "b_0": 3.0, "c_0": 1.0}),
    "tie-gold-first": Case({"a_0": 1}, TIE_RUN),
    "tie-gold-last": Case({"b_0": 1}, TIE_RUN),
}


def _module(name: str) -> Any:
    return importlib.import_module(name)


def _pytrec_eval(case: Case) -> float:
    evaluator = _module("pytrec_eval").RelevanceEvaluator({"q": dict(case.qrels)}, {"ndcg_cut.10"})
    return float(evaluator.evaluate({"q": dict(case.run)})["q"]["ndcg_cut_10"])


def _ranx(case: Case) -> float:
    ranx = _module("ranx")
    return float(ranx.evaluate(ranx.Qrels({"q": dict(case.qrels)}), ranx.Run({"q": dict(case.run)}), "ndcg@10"))


def _sklearn(case: Case) -> float:
    ndcg_score = _module("sklearn.metrics").ndcg_score
    ids = list(case.run)
    return float(ndcg_score([[case.qrels.get(i, 0) for i in ids]], [[case.run[i] for i in ids]], k=10))


def _ragsweep(case: Case) -> float:
    docs = tuple(RankedDoc(doc_id=i, score=s, file_uuid=i.split("_")[0], chunk_index=0) for i, s in case.run.items())
    run = normalise_run(Run(ranked={"q": docs}), "retrieve")
    return evaluate(Qrels(judgements={"q": dict(case.qrels)}), run, ("nDCG@10",)).per_query["q"]["nDCG@10"]


# column -> (the module that must import, the distribution whose version is printed, the scorer)
LIBRARIES: dict[str, tuple[str, str, Callable[[Case], float]]] = {
    "pytrec_eval": ("pytrec_eval", "pytrec-eval-terrier", _pytrec_eval),
    "ranx": ("ranx", "ranx", _ranx),
    "sklearn": ("sklearn.metrics", "scikit-learn", _sklearn),
    "ragsweep": ("pytrec_eval", "pytrec-eval-terrier", _ragsweep),
}


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown version"


def library_table(table: MethodologyTable) -> TableOurs:
    rows: dict[str, dict[str, Ours]] = {row.key: {} for row in table.rows}
    used: list[str] = []
    for column in table.columns:
        module, distribution, score = LIBRARIES[column]
        try:
            _module(module)
        except ImportError:
            for row in table.rows:
                rows[row.key][column] = Missing(f"{module} cannot be imported here ({distribution} is not installed)")
            continue
        version = f"{distribution} {_version(distribution)}"
        used.append(version if column != "ragsweep" else f"ragsweep's engine on {version}")
        for row in table.rows:
            case = CASES.get(row.key)
            rows[row.key][column] = Missing("no input built for this case") if case is None else score(case)
    exact = "; ".join(f"{row.key}: " + ", ".join(f"{column} {value:.6f}" for column, value in rows[row.key].items()
                                                 if isinstance(value, float)) for row in table.rows)
    notes = ("inputs (one query): graded 3/2/1 is qrels a_0=3, b_0=2, c_0=1 against a run scoring b_0 3, a_0 2, "
             "c_0 1; each tie is a run scoring a_0 and b_0 1.0 each, with qrels a_0=1 (gold sorts first) or b_0=1 "
             "(gold sorts last). ragsweep is its bench path: ties re-sorted by (doc_type, file_uuid, chunk_index) "
             "before trec_eval sees them, so the same input gets the same order on every run",
             f"to six places: {exact}")
    source = (f"computed live by `harness/reproduction/libraries.py`, nDCG@10 with linear gain "
              f"({', '.join(used)})")
    return TableOurs(rows=rows, source=source, notes=notes)
