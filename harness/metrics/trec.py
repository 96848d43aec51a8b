"""TREC-format run and qrels files, read strictly.

run line:   ``qid Q0 docid rank score tag``  (6 whitespace-separated fields)
qrels line: ``qid iter docid relevance``    (4 fields; relevance an integer)

A malformed line raises InputDataError naming ``file:line`` and what was wrong, and so does
a control character other than tab (a NUL, a form feed, a lone ``\\r``) anywhere in the file:
trec_eval reads ids as C strings, so a NUL inside an id would merge two ids, lose a query or
score garbage. Blank lines and lines starting with ``#`` are skipped. Both files are streamed
in blocks, and every check is a dict lookup or a per-line test: reading is linear in lines.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

from harness.errors import InputDataError
from harness.inputfiles import iter_input_line_blocks
from harness.model import Qrels, Run

TiePolicy = Literal["trec_eval", "docid", "rank"]
TIE_POLICIES: dict[str, str] = {
    "trec_eval": "score descending, ties by doc id descending (what trec_eval itself does)",
    "docid": "score descending, ties by doc id ascending",
    "rank": "the file's rank column, ascending (the order the system wrote)",
}

QRELS_FIELDS = ("qid", "iter", "docid", "rel")
RUN_FIELDS = ("qid", "Q0", "docid", "rank", "score", "tag")


def _skip_or_refuse(path: Path, number: int, fields: list[str], names: tuple[str, ...], kind: str) -> None:
    """A line that is not ``len(names)`` data fields: a blank or ``#`` line passes, any other is refused."""
    if fields and not fields[0].startswith("#"):
        raise InputDataError(f"{path}:{number}: {kind} line needs {len(names)} fields ({' '.join(names)}), "
                             f"got {len(fields)}")


def read_qrels(path: Path) -> Qrels:
    judgements: dict[str, dict[str, int]] = {}
    for first, lines in iter_input_line_blocks(path):
        for offset, line in enumerate(lines):
            fields = line.split()
            if len(fields) != 4 or fields[0][0] == "#":
                _skip_or_refuse(path, first + offset, fields, QRELS_FIELDS, "qrels")
                continue
            qid, _iteration, docid, rel = fields
            try:
                grade = int(rel)
            except ValueError as e:
                raise InputDataError(f"{path}:{first + offset}: relevance {rel!r} is not an integer") from e
            if grade < 0:
                raise InputDataError(f"{path}:{first + offset}: relevance {grade} is negative; expected a grade "
                                     ">= 0 (0 = judged not relevant)")
            docs = judgements.get(qid)
            if docs is None:
                docs = judgements[qid] = {}
            if docs.setdefault(docid, grade) != grade:
                raise InputDataError(f"{path}:{first + offset}: {qid} {docid} judged twice with different grades")
    # Every key and grade was checked above; validating a million entries again would copy them all.
    return Qrels.model_construct(judgements=judgements)


# A tie policy: one query's {docid: score} and {docid: rank} (empty unless the policy reads ranks)
# to its doc ids in ranked order. Doc ids are unique within a query, so every order is total.
Order = Callable[[dict[str, float], dict[str, int]], Iterator[str]]
_DOCID = operator.itemgetter(1)


def _by_score_then_docid_descending(scores: dict[str, float], _ranks: dict[str, int]) -> Iterator[str]:
    return map(_DOCID, sorted(zip(scores.values(), scores, strict=True), reverse=True))


def _by_score_then_docid(scores: dict[str, float], _ranks: dict[str, int]) -> Iterator[str]:
    return map(_DOCID, sorted(zip(map(operator.neg, scores.values()), scores, strict=True)))


def _by_rank_then_docid(_scores: dict[str, float], ranks: dict[str, int]) -> Iterator[str]:
    return map(_DOCID, sorted(zip(ranks.values(), ranks, strict=True)))


ORDERS: dict[str, Order] = {
    "trec_eval": _by_score_then_docid_descending,
    "docid": _by_score_then_docid,
    "rank": _by_rank_then_docid,
}


def read_run(path: Path, ties: TiePolicy = "trec_eval") -> tuple[dict[str, dict[str, float]], dict[str, int]]:
    """``({qid: {docid: n, n-1, ..., 1}}, {qid: tied score pairs})``: the run in the order the tie policy
    gives, as position scores (what :func:`harness.metrics.engine.evaluate_trec` takes), and the ties
    for reporting. Linear per query: a duplicate is found by a dict lookup, one sort per query."""
    order = ORDERS[ties]
    scores_by_query: dict[str, dict[str, float]] = {}
    ranks_by_query: dict[str, dict[str, int]] = {}
    keep_ranks = ties == "rank"
    for first, lines in iter_input_line_blocks(path):
        for offset, line in enumerate(lines):
            fields = line.split()
            if len(fields) != 6 or fields[0][0] == "#":
                _skip_or_refuse(path, first + offset, fields, RUN_FIELDS, "run")
                continue
            qid, _q0, docid, rank_text, score_text, _tag = fields
            try:
                rank = int(rank_text)
            except ValueError as e:
                raise InputDataError(f"{path}:{first + offset}: rank {rank_text!r} is not an integer") from e
            try:
                score = float(score_text)
            except ValueError as e:
                raise InputDataError(f"{path}:{first + offset}: score {score_text!r} is not a number") from e
            if not math.isfinite(score):
                raise InputDataError(f"{path}:{first + offset}: score {score_text!r} is not finite")
            scores = scores_by_query.get(qid)
            if scores is None:
                scores = scores_by_query[qid] = {}
            if docid in scores:
                raise InputDataError(f"{path}:{first + offset}: {qid} lists {docid} twice")
            scores[docid] = score
            if keep_ranks:
                ranks_by_query.setdefault(qid, {})[docid] = rank

    positions: dict[str, dict[str, float]] = {}
    ties_found: dict[str, int] = {}
    for qid in list(scores_by_query):
        scores = scores_by_query.pop(qid)  # dropped as it is replaced, so two copies never coexist
        tied = len(scores) - len(set(scores.values()))
        if tied:
            ties_found[qid] = tied
        ordered = order(scores, ranks_by_query.pop(qid, {}))
        positions[qid] = dict(zip(ordered, map(float, range(len(scores), 0, -1)), strict=True))
    return positions, ties_found


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
