"""Read a synthetic corpus folder (format ``otsynth-v1``) into :mod:`harness.model`.

* corpus ``synthetic``, tier A, licence "CC0-1.0 (generated)", version
  ``otsynth-v1+gen<generator version>``, the generator's seed;
* one Meeting per meeting file: ``source_id`` = meeting id, ``file_uuid`` =
  ``file_uuid_for("synthetic", meeting id)``, the recorded date with source ``corpus``,
  ``timings_real=True`` (the generator's own timings are the truth for this corpus),
  ``domain`` = the team, turns with ``words = word_count(text)``;
* lookup and multi_file queries are rank-scored with their inclusive gold spans;
  aggregation queries are answer-scored with their rule and answer (R4: sorted
  file_uuids; R6: ``{"name", "count"}``) and no gold spans;
* ``checksums``: sha256 of every file read, each checked against corpus.json first.

The adapter does not re-run the validator (``ragsweep synth validate`` does); it refuses
a folder whose files do not match their manifest.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import cast

from harness.errors import InputDataError, IntegrityError, UsageError
from harness.model import (
    Corpus,
    GoldSpan,
    Meeting,
    Query,
    QueryClass,
    ScoredOn,
    Turn,
    file_uuid_for,
    word_count,
)
from harness.synthetic.formats import (
    CORPUS_NAME,
    LICENCE,
    MANIFEST,
    QUERIES,
    TIER,
    NativeCorpus,
    NativeMeeting,
    NativeQuery,
    NativeSpan,
    read_native,
)


def read_synthetic(dest: Path, manifest: Path | None = None) -> Corpus:
    """The corpus in folder ``dest`` as a :class:`harness.model.Corpus`."""
    if manifest is not None:
        raise UsageError(
            f"--manifest {manifest}: a synthetic corpus carries its own manifest ({MANIFEST}); omit --manifest"
        )
    native = read_native(Path(dest))
    _check_integrity(native)
    return corpus_from_native(native)


def corpus_from_native(native: NativeCorpus) -> Corpus:
    """The model view of an already-read corpus folder."""
    _check_gold(native)
    uuids = {m.meeting_id: file_uuid_for(CORPUS_NAME, m.meeting_id) for m in native.meetings}
    meetings = tuple(_meeting(m) for m in sorted(native.meetings, key=lambda m: m.meeting_id))
    queries = tuple(_query(q, uuids) for q in sorted(native.queries, key=lambda q: q.id))
    return Corpus(
        name=CORPUS_NAME,
        # the regime is part of the version (an easy corpus keeps the version it always had)
        version=f"{native.manifest.format}+gen{native.manifest.generator_version}"
        + (f"+{native.manifest.regime['name']}" if native.manifest.regime else ""),
        tier=TIER,
        licence=LICENCE,
        meetings=meetings,
        queries=queries,
        checksums=dict(sorted(native.file_sha256.items())),
        dropped={},
        seed=native.manifest.seed,
    )


def _check_integrity(native: NativeCorpus) -> None:
    listed = native.manifest.files
    for rel, digest in sorted(native.file_sha256.items()):
        if rel == MANIFEST:
            continue
        if listed.get(rel) != digest:
            raise IntegrityError(
                f"{native.root}/{rel}: sha256 {digest} does not match {MANIFEST} ({listed.get(rel)}); "
                "the corpus was changed after it was written: regenerate it or run 'ragsweep synth validate'"
            )
    missing = sorted(set(listed) - set(native.file_sha256))
    if missing:
        raise IntegrityError(f"{native.root}: {missing[0]} is listed in {MANIFEST} but missing")


def _check_gold(native: NativeCorpus) -> None:
    """Every gold span lies inside its meeting with start <= end: the QMSum reader's rules (exit 4)."""
    turns = {m.meeting_id: len(m.turns) for m in native.meetings}
    for i, query in enumerate(native.queries):
        for j, span in enumerate(query.gold):
            problem = _span_problem(span, turns.get(span.meeting_id))
            if problem is not None:
                raise InputDataError(
                    f"{native.root}/{QUERIES}: queries[{i}].gold[{j}] (query {query.id}): {problem}"
                )


def _span_problem(span: NativeSpan, n_turns: int | None) -> str | None:
    if n_turns is None:
        return f"meeting {span.meeting_id!r} is not in the corpus"
    last = n_turns - 1
    start, end = span.start_turn, span.end_turn
    if start < 0:
        return f"start turn {start} is negative"
    if start > last:
        return f"start turn {start} is past the last turn ({last})"
    if end > last:
        return f"end turn {end} is past the last turn ({last})"
    if end < start:
        return f"reversed range: start turn {start} is after end turn {end}"
    return None


def _meeting(m: NativeMeeting) -> Meeting:
    turns = tuple(
        Turn(index=i, speaker=t.speaker, start=t.start, end=t.end, text=t.text, words=word_count(t.text))
        for i, t in enumerate(m.turns)
    )
    return Meeting(
        corpus=CORPUS_NAME,
        source_id=m.meeting_id,
        file_uuid=file_uuid_for(CORPUS_NAME, m.meeting_id),
        title=m.title,
        recorded_date=date.fromisoformat(m.recorded_date),
        recorded_date_source="corpus",
        timings_real=True,
        tier=TIER,
        licence=LICENCE,
        domain=m.team,
        turns=turns,
    )


def _query(q: NativeQuery, uuids: dict[str, str]) -> Query:
    gold = tuple(GoldSpan(file_uuid=uuids[s.meeting_id], start_turn=s.start_turn, end_turn=s.end_turn) for s in q.gold)
    return Query(
        id=q.id,
        corpus=CORPUS_NAME,
        query_class=cast(QueryClass, q.query_class),
        text=q.text,
        gold=gold,
        scored_on=cast(ScoredOn, q.scored_on),
        rule=q.rule,
        answer=q.answer,
        tier=TIER,
    )

