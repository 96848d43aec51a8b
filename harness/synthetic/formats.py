"""The native on-disk format ``otsynth-v1``: constants, file models, canonical bytes.

A corpus folder holds::

    corpus.json          manifest: format, generator version, seed, counts, sha256 per file
    meetings/<id>.json   one meeting: title, team, kind, date, roster, timed speaker turns
    queries.json         every query with its gold (spans or answer) and its closure
    plants.json          every planted phrase and the turns it was written into
    selfreport.json/.md  BM25 R@1 and the near-duplicate rate of this corpus
    selection.json       (selected corpora only) what was kept and dropped, and why

Every file is UTF-8 JSON written by :func:`canonical_json`: sorted keys, fixed separators,
``\\n`` newlines, so the same content is the same bytes in every process. docs/synthetic.md
describes each field. The models here check structure only; what the content must satisfy
is the validator's job, so a corrupt-but-parseable corpus fails a *named* check.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic import ValidationError as PydanticValidationError

from harness.errors import InputDataError, UsageError

FORMAT = "otsynth-v1"
GENERATOR = "ragsweep.synthetic"
GENERATOR_VERSION = "1.0.0"
CORPUS_NAME = "synthetic"
LICENCE = "CC0-1.0 (generated)"
TIER = "A"
DEFAULT_SEED = 20260812
DEFAULT_MEETINGS = 2000
DEFAULT_BUDGET = 200
MIN_MEETINGS = 20
DATE_FIRST = date(2024, 1, 1)
DATE_LAST = date(2025, 12, 31)

MANIFEST = "corpus.json"
QUERIES = "queries.json"
PLANTS = "plants.json"
MEETINGS_DIR = "meetings"
SELFREPORT_JSON = "selfreport.json"
SELFREPORT_MD = "selfreport.md"
SELECTION = "selection.json"

RULE_COUNT_FILES = "R3-agg-count-files"
RULE_LIST_FILES = "R4-agg-list-files"
RULE_COUNT_EVENTS = "R5-agg-count-events"
RULE_SPEAKER_TOP = "R6-agg-speaker-top"
RULE_TEMPORAL = "R7-agg-temporal-count"
RULES: tuple[str, ...] = (RULE_COUNT_FILES, RULE_LIST_FILES, RULE_COUNT_EVENTS, RULE_SPEAKER_TOP, RULE_TEMPORAL)
RANK_CLASSES: tuple[str, ...] = ("lookup", "multi_file")
CLASSES: tuple[str, ...] = ("lookup", "multi_file", "aggregation")
PLANT_ROLES: tuple[str, ...] = ("fact", "subject", "topic", "marker")


def query_counts(queries: list[dict[str, Any]]) -> dict[str, Any]:
    by_class = dict.fromkeys(CLASSES, 0)
    by_rule = dict.fromkeys(RULES, 0)
    for q in queries:
        by_class[q["query_class"]] = by_class.get(q["query_class"], 0) + 1
        if q["rule"] is not None:
            by_rule[q["rule"]] = by_rule.get(q["rule"], 0) + 1
    return {"by_class": by_class, "by_rule": by_rule, "total": len(queries)}


def meeting_path(meeting_id: str) -> str:
    return f"{MEETINGS_DIR}/{meeting_id}.json"


def canonical_json(obj: Any, *, indent: int | None = None) -> bytes:
    """The one way this package turns data into bytes."""
    separators = (",", ":") if indent is None else (",", ": ")
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=separators, indent=indent,
                      allow_nan=False)
    return (text + "\n").encode("utf-8")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tree_sha256(root: Path) -> str:
    """One digest over every file under ``root``: relative path and content, path-sorted."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        digest.update(f"{rel}\0{sha256_bytes(path.read_bytes())}\n".encode())
    return digest.hexdigest()


# --------------------------------------------------------------------------- file models


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NativeTurn(_Record):
    speaker: str
    start: float
    end: float
    text: str


class NativeMeeting(_Record):
    meeting_id: str
    file_uuid: str
    title: str
    team: str
    kind: str
    series_number: int
    recorded_date: str
    roster: tuple[str, ...]
    turns: tuple[NativeTurn, ...]


class NativeSpan(_Record):
    meeting_id: str
    start_turn: int
    end_turn: int


class NativeQuery(_Record):
    """One query. ``phrase``/``fact``/``speaker``/``team``/``kind``/``month``/``verb`` are the
    construction keys the validator re-derives the gold from; ``closure`` lists the
    meetings that decide the gold (selection keeps the query only when all are kept)."""

    id: str
    query_class: str
    rule: str | None
    scored_on: str
    text: str
    template: str
    gold: tuple[NativeSpan, ...]
    answer: Any
    closure: tuple[str, ...]
    phrase: str | None
    fact: str | None
    speaker: str | None
    team: str | None
    kind: str | None
    month: str | None
    verb: str | None
    # the archive regime's cues (absent from an easy corpus): the gold session's ISO date, or two attendees
    attendees: tuple[str, ...] | None = None
    date: str | None = None


class NativeMention(_Record):
    meeting_id: str
    turn: int
    count: int


class NativePlant(_Record):
    id: str
    role: str
    phrase: str
    mentions: tuple[NativeMention, ...]


class NativeManifest(_Record):
    format: str
    generator: str
    generator_version: str
    corpus: str
    licence: str
    tier: str
    seed: int
    meetings: int
    date_range: tuple[str, str]
    queries: dict[str, Any]
    files: dict[str, str]
    selection: dict[str, Any] | None
    regime: dict[str, Any] | None = None  # absent: the easy regime (harness.synthetic.regime)


class _QueryFile(_Record):
    queries: tuple[NativeQuery, ...]


class _PlantFile(_Record):
    plants: tuple[NativePlant, ...]


@dataclass(frozen=True)
class NativeCorpus:
    """A corpus folder read into memory, with the sha256 of every file as read."""

    root: Path
    manifest: NativeManifest
    meetings: tuple[NativeMeeting, ...]  # sorted by meeting_id
    queries: tuple[NativeQuery, ...]
    plants: tuple[NativePlant, ...]
    file_sha256: dict[str, str]  # relative path -> sha256 of the bytes read
    meeting_files: tuple[str, ...]  # relative paths found under meetings/

    def meeting_by_id(self) -> dict[str, NativeMeeting]:
        return {m.meeting_id: m for m in self.meetings}


def _parse(model: type[_Record], data: bytes, label: str) -> Any:
    try:
        return model.model_validate_json(data)
    except PydanticValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise InputDataError(
            f"{label}: field {where}: {first['msg']}; expected the {FORMAT} format (docs/synthetic.md)"
        ) from e


def read_native(root: Path) -> NativeCorpus:
    """Parse a corpus folder. Structure errors raise InputDataError; content is not judged."""
    root = Path(root)
    manifest_path = root / MANIFEST
    if not manifest_path.is_file():
        raise UsageError(f"{root}: no {MANIFEST}; expected a folder written by 'ragsweep synth generate'")
    hashes: dict[str, str] = {}

    def load(rel: str) -> bytes:
        path = root / rel
        try:
            data = path.read_bytes()
        except OSError as e:
            raise InputDataError(f"{root}: cannot read {rel}: {e.strerror}") from e
        hashes[rel] = sha256_bytes(data)
        return data

    manifest: NativeManifest = _parse(NativeManifest, load(MANIFEST), f"{root}/{MANIFEST}")
    query_file: _QueryFile = _parse(_QueryFile, load(QUERIES), f"{root}/{QUERIES}")
    plant_file: _PlantFile = _parse(_PlantFile, load(PLANTS), f"{root}/{PLANTS}")
    meetings_dir = root / MEETINGS_DIR
    found = sorted(p.relative_to(root).as_posix() for p in meetings_dir.glob("*.json")) if meetings_dir.is_dir() else []
    meetings = [_parse(NativeMeeting, load(rel), f"{root}/{rel}") for rel in found]
    meetings.sort(key=lambda m: m.meeting_id)
    return NativeCorpus(
        root=root,
        manifest=manifest,
        meetings=tuple(meetings),
        queries=query_file.queries,
        plants=plant_file.plants,
        file_sha256=hashes,
        meeting_files=tuple(found),
    )
