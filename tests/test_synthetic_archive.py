"""The archive regime (harness.synthetic.archive): standing items stated in several sessions with
other values, questions that tell their session apart by date or attendees, topics several series
discuss; and the validator refusing a question whose cue does not single out its session."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from harness.errors import UsageError
from harness.synthetic.folders import write_files
from harness.synthetic.formats import MANIFEST, QUERIES, canonical_json, query_counts, read_native, sha256_bytes
from harness.synthetic.generator import generate
from harness.synthetic.queries import day_label
from harness.synthetic.regime import ARCHIVE, EASY, regime_named
from harness.synthetic.selfreport import build_selfreport
from harness.synthetic.validate import validate

SEED = 20260812
# sha256 over (path, sha256) of every file generate(20260812, 60) wrote before regimes existed (18c6dfc):
# the easy regime must keep writing exactly those bytes, so every easy-regime baseline stays valid.
EASY_60_TREE = "f03c69630f0308b3bafd813d6743892bc07940c1782b8a9a1e64e98cc395a2d9"


def _tree(files: dict[str, bytes]) -> str:
    digest = hashlib.sha256()
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).hexdigest().encode() + b"\n")
    return digest.hexdigest()


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return generate(SEED, 120)


@pytest.fixture(scope="module")
def corpus(files: dict[str, bytes], tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("archive") / "c"
    root.mkdir()
    write_files(root, files)
    return root


def _meetings(files: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    return {json.loads(data)["meeting_id"]: json.loads(data) for rel, data in files.items()
            if rel.startswith("meetings/")}


def _queries(files: dict[str, bytes], query_class: str) -> list[dict[str, Any]]:
    return [q for q in json.loads(files[QUERIES])["queries"] if q["query_class"] == query_class]


def test_the_easy_regime_writes_the_bytes_of_the_generator_before_regimes() -> None:
    assert _tree(generate(SEED, 60, "easy")) == EASY_60_TREE
    assert _tree(generate(SEED, 60)) != EASY_60_TREE  # the default is the archive regime


def test_an_archive_corpus_passes_all_ten_checks(corpus: Path) -> None:
    results = validate(corpus)
    assert [r.name for r in results if not r.passed] == []
    assert all(r.checked > 0 for r in results)
    manifest = json.loads((corpus / MANIFEST).read_text())
    assert manifest["regime"]["name"] == "archive"
    assert manifest["regime"]["mechanisms"] == ARCHIVE.mechanisms


def test_meetings_are_as_long_as_an_hour_of_talk(files: dict[str, bytes]) -> None:
    turns = sorted(len(m["turns"]) for m in _meetings(files).values())
    median = turns[len(turns) // 2]
    assert 300 <= median <= 600, median  # the easy regime's median is ~180
    seconds = sorted(m["turns"][-1]["end"] for m in _meetings(files).values())
    assert seconds[len(seconds) // 2] >= 40 * 60


def test_a_standing_item_is_stated_with_another_value_in_sibling_sessions(files: dict[str, bytes]) -> None:
    meetings = _meetings(files)
    by_item: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in _queries(files, "lookup"):
        by_item[q["phrase"]].append(q)
    assert by_item and all(len(qs) >= 2 for qs in by_item.values())
    for item, qs in by_item.items():
        facts = [q["fact"] for q in qs]
        assert len(set(facts)) == len(facts), item  # one item, a different value each time
        golds = sorted(q["gold"][0]["meeting_id"] for q in qs)
        series = {(meetings[g]["team"], meetings[g]["kind"]) for g in golds}
        assert len(series) == 1, item  # a standing item of one series
        for q in qs:
            assert q["closure"] == golds  # what the cue has to tell apart
            gold = meetings[q["gold"][0]["meeting_id"]]
            assert gold["team"].lower() in q["text"].lower() and gold["kind"] in q["text"]
            others = [meetings[g] for g in golds if g != gold["meeting_id"]]
            if q["date"] is not None:
                assert q["attendees"] is None and day_label(gold["recorded_date"]) in q["text"]
                assert [o for o in others if o["recorded_date"] == q["date"]] == []
            else:
                a, b = q["attendees"]
                assert a in q["text"] and b in q["text"] and {a, b} <= set(gold["roster"])
                assert [o for o in others if {a, b} <= set(o["roster"])] == []
    cues = [q["date"] is not None for q in _queries(files, "lookup")]
    assert 0 < sum(cues) < len(cues)  # both cues are used


def test_a_topic_is_discussed_by_several_series_and_the_question_names_its_own(files: dict[str, bytes]) -> None:
    meetings = _meetings(files)
    by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in _queries(files, "multi_file"):
        by_topic[q["phrase"]].append(q)
    shared = {t: qs for t, qs in by_topic.items() if len(qs) >= 2}
    assert len(shared) >= len(by_topic) // 2
    for qs in shared.values():
        everywhere = sorted({s["meeting_id"] for q in qs for s in q["gold"]})
        for q in qs:
            gold = sorted(s["meeting_id"] for s in q["gold"])
            assert q["closure"] == everywhere
            assert q["team"].lower() in q["text"].lower() and q["kind"] in q["text"]
            assert [g for g in everywhere if (meetings[g]["team"], meetings[g]["kind"]) == (q["team"], q["kind"])] \
                == gold


def _reseal(root: Path) -> None:
    manifest = json.loads((root / MANIFEST).read_text())
    queries = json.loads((root / QUERIES).read_text())["queries"]
    manifest["files"] = {rel: sha256_bytes((root / rel).read_bytes()) for rel in manifest["files"]}
    manifest["queries"] = query_counts(queries)
    (root / MANIFEST).write_bytes(canonical_json(manifest, indent=1))


def _edit_lookup(corpus: Path, tmp_path: Path, edit: Any) -> list[str]:
    root = tmp_path / "c"
    shutil.copytree(corpus, root)
    doc = json.loads((root / QUERIES).read_text())
    dated = [q for q in doc["queries"] if q["query_class"] == "lookup" and q["date"] is not None]
    edit(dated[0], doc["queries"])
    (root / QUERIES).write_bytes(canonical_json(doc, indent=1))
    _reseal(root)
    return [r.name for r in validate(root) if not r.passed]


def test_a_question_whose_date_fits_a_sibling_session_fails_lookup_gold(corpus: Path, tmp_path: Path) -> None:
    meetings = {m.name[:-5]: json.loads(m.read_text()) for m in (corpus / "meetings").glob("*.json")}

    def to_a_sibling(q: dict[str, Any], _all: list[dict[str, Any]]) -> None:
        sibling = next(g for g in q["closure"] if g != q["gold"][0]["meeting_id"])
        q["gold"][0] = {**q["gold"][0], "meeting_id": sibling}
        q["date"] = meetings[sibling]["recorded_date"]

    assert "lookup_gold" in _edit_lookup(corpus, tmp_path, to_a_sibling)


def test_a_question_with_no_cue_fails_lookup_gold(corpus: Path, tmp_path: Path) -> None:
    def no_cue(q: dict[str, Any], _all: list[dict[str, Any]]) -> None:
        q["date"] = None

    assert _edit_lookup(corpus, tmp_path, no_cue) == ["lookup_gold"]


def test_a_closure_without_the_sibling_sessions_fails_lookup_gold(corpus: Path, tmp_path: Path) -> None:
    def gold_only(q: dict[str, Any], _all: list[dict[str, Any]]) -> None:
        q["closure"] = [q["gold"][0]["meeting_id"]]

    assert _edit_lookup(corpus, tmp_path, gold_only) == ["lookup_gold"]


def test_ablations_switch_one_mechanism_off() -> None:
    assert regime_named("archive") is ARCHIVE and regime_named("easy") is EASY
    off = regime_named("archive", without=("sibling_facts",))
    assert off.name == "archive-without-sibling-facts"
    assert off.mechanisms == {**ARCHIVE.mechanisms, "sibling_facts": False}
    short = regime_named("archive", without=("long_meetings",))
    assert short.filler_turns == EASY.filler_turns and short.series_vocabulary
    with pytest.raises(UsageError, match="unknown mechanism"):
        regime_named("archive", without=("typos",))
    with pytest.raises(UsageError, match="unknown regime"):
        regime_named("hard")


def test_the_self_report_says_what_the_sibling_sessions_cost(corpus: Path) -> None:
    report = build_selfreport(read_native(corpus))
    bm25 = report["bm25"]
    mech = bm25["mechanisms"]
    pooled = bm25["lookup"]["pooled"]
    assert mech["regime"]["name"] == "archive"
    assert sum(g["queries"] for g in mech["lookup_by_sessions_stating_the_item"].values()) == pooled["queries"]
    assert sum(g["queries"] for g in mech["lookup_by_cue"].values()) == pooled["queries"]
    assert "none" not in mech["lookup_by_cue"]  # every archive lookup is told apart by something
    alone = mech["lookup_without_sibling_sessions"]
    assert alone["queries"] == pooled["queries"]
    # the sibling sessions are what makes an archive lookup hard for BM25
    assert alone["r_at_1"] > pooled["r_at_1"] + 0.2
    assert alone["mean_others_within_90pct"] < pooled["mean_others_within_90pct"]


def test_the_corpus_version_names_the_regime(corpus: Path, tmp_path: Path) -> None:
    from harness.synthetic.adapter import corpus_from_native

    assert corpus_from_native(read_native(corpus)).version == "otsynth-v1+gen1.0.0+archive"
    write_files(tmp_path, generate(SEED, 20, "easy"))
    assert corpus_from_native(read_native(tmp_path)).version == "otsynth-v1+gen1.0.0"
