"""state build checks what it indexes (harness.corpora.checks, issue 51): query and meeting ids well formed and
unique, gold inside its meetings, a file in one corpus, the synthetic tier's validator, and the same rules
again when a state is opened. Every corpus here was edited and its sha256 re-recorded in corpus.json, so it
reads; on e2cb9a0 each was built (exit 0) and measured to a wrong number."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.corpora.checks import corpus_problems, id_problem
from harness.errors import InputDataError
from harness.model import Corpus
from harness.state import State
from harness.state.build import build_state
from harness.state.contents import contents_block
from harness.synthetic.adapter import read_synthetic
from harness.synthetic.folders import write_files
from harness.synthetic.formats import QUERIES
from harness.synthetic.generator import generate
from tests.test_ingest_eager import HashEmbedder
from tests.test_synthetic_validate import _edit_query, _load, _reseal


@pytest.mark.parametrize(("value", "problem"), [
    ("lookup-00036", None),
    ("qmsum-Bed002-003", None),
    ("lookup-00036\x00", "query id 'lookup-00036\\x00' holds the control character '\\x00'"),
    ("", "query id '' is empty"),
    ("lookup 36", "query id 'lookup 36' holds the whitespace ' '"),
    ("lookup-36\u00a0", "query id 'lookup-36\\xa0' holds the whitespace '\\xa0'"),
    ("look\u200bup", "query id 'look\\u200bup' holds the unprintable character '\\u200b' (U+200B)"),
])
def test_the_id_rules(value: str, problem: str | None) -> None:
    assert id_problem("query id", value) == problem


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("checks") / "c"
    write_files(root, generate(1, 20, "easy"))
    return root


def _lookups(root: Path) -> list[dict[str, Any]]:
    return [q for q in _load(root, QUERIES)["queries"] if q["query_class"] == "lookup"]


def _nul_id(root: Path) -> None:
    first = _lookups(root)[0]["id"]
    _edit_query(root, first, lambda q: q.update(id=first + "\x00"))


def _duplicate_id(root: Path) -> None:
    one, two = _lookups(root)[:2]
    _edit_query(root, two["id"], lambda q: q.update(id=one["id"]))


def _moved_gold(root: Path) -> None:
    q = _lookups(root)[0]
    span = q["gold"][0]
    away = 0 if span["start_turn"] > 0 else span["end_turn"] + 1  # a turn of the meeting the fact is not at
    _edit_query(root, q["id"], lambda q: q["gold"][0].update(start_turn=away, end_turn=away))


class _FakeModel(HashEmbedder):
    """What the CLI loads in these tests: on e2cb9a0 the build went on to encode, fast, and exited 0."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()


@pytest.mark.parametrize(("edit", "code", "message"), [
    (_nul_id, 4, " (corpus synthetic): query id 'lookup-00001\\x00' holds the control character '\\x00'; "
                 "fix the corpus (for the synthetic tier: regenerate it"),
    (_duplicate_id, 4, " (corpus synthetic): query id 'lookup-00001' occurs 2 times; fix the corpus"),
    (_moved_gold, 7, ": check lookup_gold failed with 1 problem(s); first: lookup-00001: the fact is at m0"),
])
def test_state_build_refuses_a_corpus_edited_and_resealed(edit: Any, code: int, message: str, corpus_dir: Path,
                                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("harness.index.embed.SentenceTransformerEmbedder", _FakeModel)
    root = tmp_path / "c"
    shutil.copytree(corpus_dir, root)
    edit(root)
    _reseal(root)
    read_synthetic(root)  # it reads: its checksums are the ones corpus.json records
    out = tmp_path / "state"
    assert main(["state", "build", "--corpus", f"synthetic={root}", "--out", str(out),
                 "--embedding-cache", "none"]) == code
    err = capsys.readouterr().err
    assert err.startswith(f"ragsweep: error: {root}{message}") and err.count("\n") == 1, err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["c"]


def test_the_unedited_corpus_builds(corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("harness.index.embed.SentenceTransformerEmbedder", _FakeModel)
    out = tmp_path / "state"
    assert main(["state", "build", "--corpus", f"synthetic={corpus_dir}", "--out", str(out),
                 "--embedding-cache", "none"]) == 0
    assert State.open(out).corpora[0].queries


def test_a_file_in_two_corpora_and_gold_outside_its_meeting(corpus_dir: Path, tmp_path: Path) -> None:
    corpus = read_synthetic(corpus_dir)
    twin = corpus.model_copy(update={"name": "twin", "queries": ()})
    with pytest.raises(InputDataError, match=r"^corpus synthetic: file \S+ \(meeting 'm00001'\) is in the corpora "
                                             r"synthetic, twin: a file belongs to one corpus \(19 more problem"):
        build_state(tmp_path / "state", [corpus, twin], {"header": HashEmbedder()})
    assert not (tmp_path / "state").exists()
    q = next(q for q in corpus.queries if q.gold)
    meeting = next(m for m in corpus.meetings if m.file_uuid == q.gold[0].file_uuid)
    past = q.model_copy(update={"gold": (q.gold[0].model_copy(update={"end_turn": len(meeting.turns)}),)})
    elsewhere = q.model_copy(update={"gold": (q.gold[0].model_copy(update={"file_uuid": "not-a-file"}),)})
    spaced = meeting.model_copy(update={"source_id": "m 1"})
    cases = {past: f"span [{q.gold[0].start_turn}, {len(meeting.turns)}] is outside meeting "
                   f"{meeting.source_id!r} ({len(meeting.turns)} turns)",
             elsewhere: "file not-a-file is not a meeting of this corpus"}
    for bad, said in cases.items():
        edited = corpus.model_copy(update={"queries": tuple(bad if x.id == q.id else x for x in corpus.queries)})
        assert list(corpus_problems([edited])) == [("synthetic", f"query {q.id!r} gold[0]: {said}")]
    edited = corpus.model_copy(update={"meetings": tuple(spaced if m is meeting else m for m in corpus.meetings)})
    assert ("synthetic", "meeting id 'm 1' holds the whitespace ' '") in list(corpus_problems([edited]))
    other = Corpus.model_validate({**corpus.model_dump(), "name": "qmsum", "meetings": (),
                                   "queries": [x.model_dump() for x in corpus.queries[:1]]})
    problems = list(corpus_problems([corpus, other.model_copy(update={"queries": other.queries[:1]})]))
    assert (problems[-1] == ("synthetic", f"query id {corpus.queries[0].id!r} occurs 2 times"))


def test_state_open_checks_the_corpora_a_state_holds(corpus_dir: Path, tmp_path: Path) -> None:
    """A state whose corpus copy was edited and every digest re-recorded (or one built before the checks)."""
    out = tmp_path / "state"
    build_state(out, [read_synthetic(corpus_dir)], {"header": HashEmbedder()})
    copy = out / "corpora" / "synthetic.json"
    data = json.loads(copy.read_text())
    data["queries"][1]["id"] = data["queries"][0]["id"]
    copy.write_text(json.dumps(data) + "\n")
    manifest = json.loads((out / "state.json").read_text())
    manifest["contents"] = contents_block(out, manifest)
    (out / "state.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    with pytest.raises(InputDataError) as caught:
        State.open(out)
    assert str(caught.value) == (f"{copy} (corpus synthetic): query id {data['queries'][0]['id']!r} occurs 2 "
                                 "times; the state holds a corpus that breaks them: rebuild it from a corpus that "
                                 "passes (`ragsweep state build --force`)")
