"""TREC-format run and qrels files, read strictly.

run line:   ``qid Q0 docid rank score tag``  (6 whitespace-separated fields)
qrels line: ``qid iter docid relevance``    (4 fields; relevance an integer)

A malformed line raises InputDataError naming ``file:line`` and what was wrong.
Blank lines and lines starting with ``#`` are skipped.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from harness.errors import InputDataError
from harness.inputfiles import read_input_text
from harness.model import Qrels, RankedDoc, Run

TiePolicy = Literal["trec_eval", "docid", "rank"]
TIE_POLICIES: dict[str, str] = {
    "trec_eval": "score descending, ties by doc id descending (what trec_eval itself does)",
    "docid": "score descending, ties by doc id ascending",
    "rank": "the file's rank column, ascending (the order the system wrote)",
}


def _lines(path: Path) -> list[tuple[int, list[str]]]:
    text = read_input_text(path)
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            out.append((number, stripped.split()))
    return out


def read_qrels(path: Path) -> Qrels:
    judgements: dict[str, dict[str, int]] = {}
    for number, fields in _lines(path):
        if len(fields) != 4:
            raise InputDataError(f"{path}:{number}: qrels line needs 4 fields (qid iter docid rel), got {len(fields)}")
        qid, _iteration, docid, rel = fields
        try:
            grade = int(rel)
        except ValueError as e:
            raise InputDataError(f"{path}:{number}: relevance {rel!r} is not an integer") from e
        if grade < 0:
            raise InputDataError(f"{path}:{number}: relevance {grade} is negative; expected a grade >= 0 "
                                 "(0 = judged not relevant)")
        docs = judgements.setdefault(qid, {})
        if docid in docs and docs[docid] != grade:
            raise InputDataError(f"{path}:{number}: {qid} {docid} judged twice with different grades")
        docs[docid] = grade
    return Qrels(judgements=judgements)


def read_run(path: Path, ties: TiePolicy = "trec_eval") -> tuple[Run, dict[str, int]]:
    """The run in the order the tie policy gives, plus {qid: tied score pairs} for reporting."""
    rows: dict[str, list[tuple[str, int, float]]] = {}
    for number, fields in _lines(path):
        if len(fields) != 6:
            raise InputDataError(
                f"{path}:{number}: run line needs 6 fields (qid Q0 docid rank score tag), got {len(fields)}"
            )
        qid, _q0, docid, rank_text, score_text, _tag = fields
        try:
            rank = int(rank_text)
        except ValueError as e:
            raise InputDataError(f"{path}:{number}: rank {rank_text!r} is not an integer") from e
        try:
            score = float(score_text)
        except ValueError as e:
            raise InputDataError(f"{path}:{number}: score {score_text!r} is not a number") from e
        if not math.isfinite(score):
            raise InputDataError(f"{path}:{number}: score {score_text!r} is not finite")
        if any(d == docid for d, _, _ in rows.get(qid, [])):
            raise InputDataError(f"{path}:{number}: {qid} lists {docid} twice")
        rows.setdefault(qid, []).append((docid, rank, score))

    ranked: dict[str, tuple[RankedDoc, ...]] = {}
    ties_found: dict[str, int] = {}
    for qid, entries in rows.items():
        if ties == "rank":
            ordered = sorted(entries, key=lambda e: (e[1], e[0]))
        elif ties == "docid":
            ordered = sorted(entries, key=lambda e: (-e[2], e[0]))
        else:
            ordered = sorted(sorted(entries, key=lambda e: e[0], reverse=True), key=lambda e: -e[2])
        scores = [e[2] for e in entries]
        tied = len(scores) - len(set(scores))
        if tied:
            ties_found[qid] = tied
        n = len(ordered)
        ranked[qid] = tuple(RankedDoc(doc_id=d, score=float(n - i)) for i, (d, _r, _s) in enumerate(ordered))
    return Run(ranked=ranked), ties_found


def write_trec_run(run: Run, tag: str) -> str:
    """The run as TREC text, in the order given (scores as written)."""
    lines = []
    for qid in sorted(run.ranked):
        for rank, doc in enumerate(run.ranked[qid], start=1):
            lines.append(f"{qid} Q0 {doc.doc_id} {rank} {doc.score:g} {'_'.join(tag.split()) or 'run'}")
    return "\n".join(lines) + ("\n" if lines else "")


def write_trec_qrels(qrels: Qrels) -> str:
    lines = [f"{qid} 0 {doc} {grade}" for qid in sorted(qrels.judgements)
             for doc, grade in sorted(qrels.judgements[qid].items())]
    return "\n".join(lines) + ("\n" if lines else "")
