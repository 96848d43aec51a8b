"""TREC-format run and qrels files, read strictly.

run line:   ``qid Q0 docid rank score tag``  (6 whitespace-separated fields)
qrels line: ``qid iter docid relevance``    (4 fields; relevance an integer 0..1000)

Numbers are read as trec_eval reads them, or refused where Python would read them otherwise:
trec_eval takes a score with C's ``atof`` and a grade with ``atol``, which stop at the first
character they do not know, while Python's ``float`` and ``int`` read ``1_0`` as 10 and Arabic-Indic
digits as digits. So a score is a plain ASCII decimal (``1``, ``-0.5``, ``.5``, ``2e-3``; not ``nan``
or ``inf``) and a grade plain ASCII digits. A grade is at most :data:`MAX_GRADE`: trec_eval sizes its
per-query tables by the largest grade, so 1e9 allocated gigabytes, 2^32 scored
the query 0, 2^62 crashed it. A negative grade is refused: trec_eval assumes "a small non-negative
integer" and keeps -1 and -2 for its own "not pooled" and "pooled, not judged". A qrels with no
judgement at all is refused too (it would score every run 0).

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
MAX_GRADE = 1000  # the largest relevance grade read (trec_eval's cost grows with the grade itself)
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
            # the common case in three C calls: one to four ASCII digits, 0..9999
            grade = int(rel) if len(rel) <= 4 and rel.isdigit() and rel.isascii() else -1
            if not 0 <= grade <= MAX_GRADE:
                grade = _grade(path, first + offset, rel)
            docs = judgements.get(qid)
            if docs is None:
                docs = judgements[qid] = {}
            if docs.setdefault(docid, grade) != grade:
                raise InputDataError(f"{path}:{first + offset}: {qid} {docid} judged twice with different grades")
    if not judgements:
        raise InputDataError(f"{path}: no judgements (every line blank or a # comment); expected lines "
                             f"{' '.join(QRELS_FIELDS)}, one per judged document")
    # Every key and grade was checked above; validating a million entries again would copy them all.
    return Qrels.model_construct(judgements=judgements)


def _grade(path: Path, number: int, rel: str) -> int:
    """A grade off the common path: leading zeros (``0002``), or one of the refusals, naming the line."""
    digits = rel.removeprefix("-")
    if not (digits.isdigit() and digits.isascii()):  # ``+1``, ``1_0``, ``1.0``, Arabic-Indic digits
        raise InputDataError(f"{path}:{number}: relevance {_quoted(rel)!r} is not an integer")
    if rel.startswith("-"):
        raise InputDataError(f"{path}:{number}: relevance {_quoted(rel)} is negative; expected a grade "
                             ">= 0 (0 = judged not relevant)")
    significant = rel.lstrip("0") or "0"
    if len(significant) > 4 or int(significant) > MAX_GRADE:
        raise InputDataError(f"{path}:{number}: relevance {_quoted(significant)} is above {MAX_GRADE}, the largest "
                             "grade read (trec_eval's cost grows with the grade itself); expected a grade "
                             f"0..{MAX_GRADE} (0 = judged not relevant)")
    return int(significant)


def _rank(path: Path, number: int, text: str) -> int:
    """A rank off the common path: signed, or refused (``1_0``, ``1.0``, other digits) naming the line."""
    digits = text[1:] if text[:1] in ("-", "+") else text
    if not (digits.isdigit() and digits.isascii()):
        raise InputDataError(f"{path}:{number}: rank {_quoted(text)!r} is not an integer")
    if len(digits) > 18:
        raise InputDataError(f"{path}:{number}: rank {_quoted(text)!r} has more than 18 digits")
    return int(text)


def _refuse_score(path: Path, number: int, text: str) -> None:
    """A score that is not a finite plain ASCII decimal, refused naming the line: ``1_0`` (float() reads
    10, trec_eval's atof 1), other digits than 0-9, ``nan``, ``inf`` or one that overflows (``1e999``)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if math.isfinite(value) or "_" in text or not text.isascii():
        raise InputDataError(f"{path}:{number}: score {_quoted(text)!r} is not a number")
    raise InputDataError(f"{path}:{number}: score {_quoted(text)!r} is not finite")


def _quoted(text: str, at_most: int = 40) -> str:
    """``text`` for a message: whole when short, else its start and length (a line can be 65,536 long)."""
    return text if len(text) <= at_most else f"{text[:at_most]}... ({len(text):,} characters)"


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
            if len(rank_text) <= 18 and rank_text.isdigit() and rank_text.isascii():
                rank = int(rank_text)
            else:
                rank = _rank(path, first + offset, rank_text)
            try:
                score = float(score_text)
            except ValueError:
                score = math.nan
            if not math.isfinite(score) or "_" in score_text or not score_text.isascii():
                _refuse_score(path, first + offset, score_text)
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
