"""Read QMSum (Yale-LILY/QMSum, ``data/ALL``) into the shared model.

QMSum's published format is one JSON object per meeting::

    {
      "topic_list":          [{"topic": str, "relevant_text_span": [[start, end], ...]}],
      "general_query_list":  [{"query": str, "answer": str}],
      "specific_query_list": [{"query": str, "answer": str, "relevant_text_span": [[start, end], ...]}],
      "meeting_transcripts": [{"speaker": str, "content": str}]
    }

A span is a list of ``[start, end]`` pairs of turn indices written as decimal strings,
inclusive and 0-based into ``meeting_transcripts``. Other top-level keys are ignored.

What the reader makes of it:

* one :class:`~harness.model.Meeting` per file (``source_id`` = file stem), its domain
  taken from the manifest, with synthetic timings (:mod:`harness.corpora.timing`) and
  ``timings_real=False``: QMSum has no timestamps;
* one rank-scored :class:`~harness.model.Query` per specific query, id
  ``qmsum-{source_id}-{k:03d}`` with ``k`` its position in ``specific_query_list``, class
  from :mod:`harness.corpora.classify`, gold = its spans in the order given;
* general queries ("summarise the whole meeting") are counted, not scored:
  ``dropped["general_query_not_scored"]``; a specific query with an empty span list
  has no gold and is counted in ``dropped["specific_query_without_span"]``.

Only the fields the harness uses are validated deeply; ``topic_list`` must be a list.
Every file is checked against the manifest's sha256 before it is parsed, so a corpus
always carries the version (the pinned commit) that its bytes really are.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.corpora.classify import classify_query
from harness.corpora.manifest import Artefact, Manifest
from harness.corpora.registry import ManifestArg, get_source, load_source_manifest
from harness.corpora.timing import synthetic_timings
from harness.errors import InputDataError, IntegrityError
from harness.model import Corpus, GoldSpan, Meeting, Query, Turn, file_uuid_for, word_count

CORPUS = "qmsum"
DROPPED_GENERAL = "general_query_not_scored"
DROPPED_NO_SPAN = "specific_query_without_span"
_DECIMAL = re.compile(r"^[0-9]+$")
_REQUIRED_LISTS = ("meeting_transcripts", "specific_query_list", "general_query_list", "topic_list")


@dataclass(frozen=True)
class _Parsed:
    meeting: Meeting
    queries: tuple[Query, ...]
    dropped: Counter[str]


def read_qmsum(dest: Path, manifest: ManifestArg = None) -> Corpus:
    """Read every meeting file the manifest lists under ``dest`` into a Corpus.

    ``manifest`` defaults to the pinned, packaged one; pass a path (or a parsed
    :class:`~harness.corpora.manifest.Manifest`) to read another copy, e.g. the test fixture.
    """
    source = get_source(CORPUS)
    pinned = load_source_manifest(source, manifest)
    if pinned.commit is None:
        raise InputDataError(f"{pinned.label}: no 'pinned commit' comment, so the corpus version is unknown")
    artefacts = [a for a in pinned.artefacts if a.path.endswith(".json")]
    if not artefacts:
        raise InputDataError(f"{pinned.label}: lists no meeting (.json) files")

    meetings: list[Meeting] = []
    queries: list[Query] = []
    dropped: Counter[str] = Counter({DROPPED_GENERAL: 0, DROPPED_NO_SPAN: 0})
    checksums: dict[str, str] = {}
    stems: dict[str, str] = {}
    for artefact in artefacts:
        data = _read_verified(Path(dest), artefact, pinned)
        checksums[artefact.path] = artefact.sha256
        source_id = Path(artefact.path).stem
        if source_id in stems:
            raise InputDataError(
                f"{pinned.label}: {artefact.path} and {stems[source_id]} share the meeting id {source_id}"
            )
        stems[source_id] = artefact.path
        parsed = _parse_meeting(_load_json(data, artefact.path), artefact.path, source_id, artefact.domain)
        meetings.append(parsed.meeting)
        queries.extend(parsed.queries)
        dropped.update(parsed.dropped)

    return Corpus(
        name=CORPUS,
        version=pinned.commit,
        tier=source.tier,
        licence=source.licence,
        meetings=tuple(sorted(meetings, key=lambda m: m.source_id)),
        queries=tuple(sorted(queries, key=lambda q: q.id)),
        checksums=dict(sorted(checksums.items())),
        dropped=dict(sorted(dropped.items())),
    )


def _read_verified(dest: Path, artefact: Artefact, manifest: Manifest) -> bytes:
    target = dest / artefact.path
    try:
        data = target.read_bytes()
    except FileNotFoundError as e:
        raise IntegrityError(
            f"{artefact.path}: missing under {dest}; fetch it with 'ragsweep corpus fetch {CORPUS}'"
        ) from e
    got = hashlib.sha256(data).hexdigest()
    if got != artefact.sha256:
        raise IntegrityError(
            f"{artefact.path}: sha256 {got} under {dest}, expected {artefact.sha256} from {manifest.label}; "
            "re-fetch it or point --manifest at the manifest that pins this copy"
        )
    return data


def _load_json(data: bytes, rel: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise InputDataError(f"{rel}: not UTF-8 ({e.reason} at byte {e.start})") from e
    except json.JSONDecodeError as e:
        raise InputDataError(f"{rel}: line {e.lineno} column {e.colno}: invalid JSON: {e.msg}") from e


# --------------------------------------------------------------------------- field checks


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(value: Any) -> str:
    """What a JSON value is, for messages: containers by kind, scalars with their value."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"a string {_show(value)}"
    if isinstance(value, bool):
        return f"a boolean {_show(value)}"
    return f"a number {_show(value)}"


class _Fields:
    """Field access that fails with ``file: field.path: problem``."""

    def __init__(self, rel: str) -> None:
        self.rel = rel

    def fail(self, field: str, problem: str) -> InputDataError:
        return InputDataError(f"{self.rel}: {field}: {problem}" if field else f"{self.rel}: {problem}")

    def get(self, obj: dict[str, Any], key: str, field: str) -> Any:
        if key not in obj:
            raise self.fail(field, "missing")
        return obj[key]

    def obj(self, value: Any, field: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(field, f"expected an object, got {_kind(value)}")
        return value

    def list_at(self, obj: dict[str, Any], key: str, field: str) -> list[Any]:
        value = self.get(obj, key, field)
        if not isinstance(value, list):
            raise self.fail(field, f"expected a list, got {_kind(value)}")
        return value

    def str_at(self, obj: dict[str, Any], key: str, field: str) -> str:
        value = self.get(obj, key, field)
        if not isinstance(value, str):
            raise self.fail(field, f"expected a string, got {_kind(value)}")
        return value


def _parse_meeting(raw: Any, rel: str, source_id: str, domain: str | None) -> _Parsed:
    f = _Fields(rel)
    top = f.obj(raw, "")
    lists = {key: f.list_at(top, key, key) for key in _REQUIRED_LISTS}

    transcript = lists["meeting_transcripts"]
    if not transcript:
        raise f.fail("meeting_transcripts", "empty: a meeting needs at least one turn")
    speakers: list[str] = []
    texts: list[str] = []
    for i, item in enumerate(transcript):
        field = f"meeting_transcripts[{i}]"
        turn = f.obj(item, field)
        speakers.append(f.str_at(turn, "speaker", f"{field}.speaker"))
        texts.append(f.str_at(turn, "content", f"{field}.content"))
    words = [word_count(text) for text in texts]
    turns = tuple(
        Turn(index=i, speaker=speaker, start=start, end=end, text=text, words=n)
        for i, (speaker, text, n, (start, end)) in enumerate(
            zip(speakers, texts, words, synthetic_timings(words), strict=True)
        )
    )
    file_uuid = file_uuid_for(CORPUS, source_id)
    meeting = Meeting(
        corpus=CORPUS,
        source_id=source_id,
        file_uuid=file_uuid,
        title=source_id,
        timings_real=False,
        tier="A",
        licence=get_source(CORPUS).licence,
        domain=domain,
        turns=turns,
    )

    dropped: Counter[str] = Counter()
    for i, item in enumerate(lists["general_query_list"]):
        field = f"general_query_list[{i}]"
        f.str_at(f.obj(item, field), "query", f"{field}.query")
        dropped[DROPPED_GENERAL] += 1

    queries: list[Query] = []
    for k, item in enumerate(lists["specific_query_list"]):
        field = f"specific_query_list[{k}]"
        entry = f.obj(item, field)
        text = f.str_at(entry, "query", f"{field}.query")
        if not text.strip():
            raise f.fail(f"{field}.query", "empty")
        f.str_at(entry, "answer", f"{field}.answer")
        spans = f.list_at(entry, "relevant_text_span", f"{field}.relevant_text_span")
        gold = tuple(
            _span(f, span, f"{field}.relevant_text_span[{j}]", file_uuid, len(turns))
            for j, span in enumerate(spans)
        )
        if not gold:
            dropped[DROPPED_NO_SPAN] += 1
            continue
        queries.append(
            Query(
                id=f"{CORPUS}-{source_id}-{k:03d}",
                corpus=CORPUS,
                query_class=classify_query(text),
                text=text,
                gold=gold,
                scored_on="rank",
                tier="A",
            )
        )
    return _Parsed(meeting=meeting, queries=tuple(queries), dropped=dropped)


def _span(f: _Fields, value: Any, field: str, file_uuid: str, n_turns: int) -> GoldSpan:
    if not isinstance(value, list) or len(value) != 2:
        raise f.fail(field, f"expected a [start, end] pair of decimal strings, got {_show(value)}")
    bounds = []
    for position, bound in enumerate(value):
        if not isinstance(bound, str) or not _DECIMAL.match(bound):
            raise f.fail(f"{field}[{position}]", f"expected a decimal string, got {_kind(bound)}")
        bounds.append(int(bound))
    start, end = bounds
    last = n_turns - 1
    if start > last:
        raise f.fail(field, f"start turn {start} is past the last turn ({last})")
    if end > last:
        raise f.fail(field, f"end turn {end} is past the last turn ({last})")
    if end < start:
        raise f.fail(field, f"reversed range: start turn {start} is after end turn {end}")
    return GoldSpan(file_uuid=file_uuid, start_turn=start, end_turn=end)
