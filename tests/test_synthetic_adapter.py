"""The adapter: the native format read into harness.model exactly as the brief specifies."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness.errors import IntegrityError, UsageError
from harness.model import Corpus, file_uuid_for, word_count
from harness.synthetic.adapter import read_synthetic
from harness.synthetic.folders import write_files
from harness.synthetic.formats import QUERIES
from harness.synthetic.generator import generate

SEED = 20260812


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("adapter") / "c"
    root.mkdir()
    write_files(root, generate(SEED, 60, "easy"))
    return root


@pytest.fixture(scope="module")
def corpus(folder: Path) -> Corpus:
    return read_synthetic(folder)


def test_corpus_identity(corpus: Corpus) -> None:
    assert (corpus.name, corpus.tier, corpus.licence, corpus.seed) == ("synthetic", "A", "CC0-1.0 (generated)", SEED)
    assert corpus.version == "otsynth-v1+gen1.0.0"
    assert corpus.dropped == {}


def test_meetings(folder: Path, corpus: Corpus) -> None:
    ids = [m.source_id for m in corpus.meetings]
    assert ids == sorted(ids) and len(ids) == 60
    for meeting in corpus.meetings:
        native = json.loads((folder / f"meetings/{meeting.source_id}.json").read_text(encoding="utf-8"))
        assert meeting.file_uuid == file_uuid_for("synthetic", meeting.source_id)
        assert meeting.title == native["title"]
        assert meeting.recorded_date is not None and meeting.recorded_date.isoformat() == native["recorded_date"]
        assert meeting.recorded_date_source == "corpus" and meeting.timings_real is True
        assert meeting.domain == native["team"] and meeting.tier == "A"
        assert list(meeting.roster) == native["roster"]
        assert [t.text for t in meeting.turns] == [t["text"] for t in native["turns"]]
        assert all(t.words == word_count(t.text) for t in meeting.turns)


def test_queries(corpus: Corpus) -> None:
    ids = [q.id for q in corpus.queries]
    assert ids == sorted(ids)
    uuids = {m.file_uuid for m in corpus.meetings}
    for q in corpus.queries:
        assert q.corpus == "synthetic" and q.tier == "A"
        if q.query_class in ("lookup", "multi_file"):
            assert q.scored_on == "rank" and q.rule is None and q.answer is None
            assert q.gold and all(s.file_uuid in uuids and s.start_turn <= s.end_turn for s in q.gold)
        else:
            assert q.query_class == "aggregation" and q.scored_on == "answer" and not q.gold
            assert q.rule is not None and q.rule.startswith(("R3-", "R4-", "R5-", "R6-", "R7-"))
    r4 = [q for q in corpus.queries if q.rule == "R4-agg-list-files"]
    assert r4 and all(q.answer == sorted(q.answer) and set(q.answer) <= uuids for q in r4)
    r6 = [q for q in corpus.queries if q.rule == "R6-agg-speaker-top"]
    assert r6 and all(set(q.answer) == {"name", "count"} for q in r6)


def test_gold_spans_are_the_native_spans(folder: Path, corpus: Corpus) -> None:
    native = {q["id"]: q for q in json.loads((folder / QUERIES).read_text(encoding="utf-8"))["queries"]}
    for q in corpus.queries:
        expected = [(file_uuid_for("synthetic", s["meeting_id"]), s["start_turn"], s["end_turn"])
                    for s in native[q.id]["gold"]]
        assert [(s.file_uuid, s.start_turn, s.end_turn) for s in q.gold] == expected


def test_checksums_are_sha256_of_every_file_read(folder: Path, corpus: Corpus) -> None:
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.json"))
    assert sorted(corpus.checksums) == files
    for rel, digest in corpus.checksums.items():
        assert hashlib.sha256((folder / rel).read_bytes()).hexdigest() == digest


def test_a_changed_file_is_an_integrity_error(folder: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "c"
    shutil.copytree(folder, copy)
    path = next((copy / "meetings").glob("*.json"))
    path.write_bytes(path.read_bytes().replace(b"Okay", b"OK", 1))
    with pytest.raises(IntegrityError, match="sha256"):
        read_synthetic(copy)


def test_manifest_argument_is_refused(folder: Path) -> None:
    with pytest.raises(UsageError, match="own manifest"):
        read_synthetic(folder, manifest=folder / "corpus.json")
