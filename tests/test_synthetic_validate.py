"""The validator: all ten checks pass on generated corpora, and each one fails, by name, on a
corpus corrupted in exactly the way that check exists to catch."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.errors import InputDataError, ValidationError
from harness.synthetic.folders import write_files
from harness.synthetic.formats import MANIFEST, PLANTS, QUERIES, canonical_json, query_counts, sha256_bytes
from harness.synthetic.generator import generate
from harness.synthetic.validate import CHECKS, validate, validate_or_raise

CHECK_NAMES = [
    "manifest", "ids", "titles_dates", "rosters", "turn_timings", "lookup_gold", "multi_file_gold",
    "aggregation_answers", "no_accidental_markers", "query_text",
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synthetic") / "c"
    root.mkdir()
    write_files(root, generate(20260812, 100, "easy"))
    return root


def _copy(corpus: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "c"
    shutil.copytree(corpus, dest)
    return dest


def _load(root: Path, rel: str) -> Any:
    return json.loads((root / rel).read_text(encoding="utf-8"))


def _save(root: Path, rel: str, data: Any, *, indent: int | None = 1) -> None:
    (root / rel).write_bytes(canonical_json(data, indent=None if rel.startswith("meetings/") else indent))


def _reseal(root: Path) -> None:
    """Rewrite the manifest's sha256 and counts, as a careless editor of the corpus would."""
    manifest = _load(root, MANIFEST)
    manifest["files"] = {rel: sha256_bytes((root / rel).read_bytes()) for rel in manifest["files"]}
    manifest["queries"] = query_counts(_load(root, QUERIES)["queries"])
    _save(root, MANIFEST, manifest)


def _queries(root: Path) -> list[dict[str, Any]]:
    return list(_load(root, QUERIES)["queries"])


def _first(root: Path, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    return next(q for q in _queries(root) if predicate(q))


def _edit_query(root: Path, qid: str, change: Callable[[dict[str, Any]], None]) -> None:
    data = _load(root, QUERIES)
    for q in data["queries"]:
        if q["id"] == qid:
            change(q)
    _save(root, QUERIES, data)


def _edit_meeting(root: Path, meeting_id: str, change: Callable[[dict[str, Any]], None]) -> None:
    rel = f"meetings/{meeting_id}.json"
    data = _load(root, rel)
    change(data)
    _save(root, rel, data)


def _any_meeting(root: Path) -> str:
    return sorted(p.stem for p in (root / "meetings").glob("*.json"))[0]


# --------------------------------------------------------------------------- corruptions, one per check


def corrupt_manifest(root: Path) -> None:
    # edit a filler turn and do NOT reseal: the sha256 no longer matches
    _edit_meeting(root, _any_meeting(root), lambda m: m["turns"][0].update(text="Okay, let's begin now."))


def corrupt_ids(root: Path) -> None:
    lookups = [q for q in _queries(root) if q["query_class"] == "lookup"]
    _edit_query(root, lookups[1]["id"], lambda q: q.update(id=lookups[0]["id"]))
    _reseal(root)


def corrupt_titles_dates(root: Path) -> None:
    _edit_meeting(root, _any_meeting(root), lambda m: m.update(title=m["title"] + "00"))
    _reseal(root)


def corrupt_rosters(root: Path) -> None:
    _edit_meeting(root, _any_meeting(root), lambda m: m.update(roster=list(reversed(m["roster"]))))
    _reseal(root)


def corrupt_turn_timings(root: Path) -> None:
    def overlap_self(m: dict[str, Any]) -> None:
        turns = m["turns"]
        first = turns[0]
        later = next(t for t in turns[1:] if t["speaker"] == first["speaker"])
        first["end"] = round(later["start"] + 1.0, 2)  # the opener still talks when they speak again

    _edit_meeting(root, _any_meeting(root), overlap_self)
    _reseal(root)


def corrupt_lookup_gold(root: Path) -> None:
    q = _first(root, lambda q: q["query_class"] == "lookup")
    _edit_query(root, q["id"], lambda q: q["gold"][0].update(end_turn=q["gold"][0]["start_turn"]))
    _reseal(root)


def corrupt_multi_file_gold(root: Path) -> None:
    q = _first(root, lambda q: q["query_class"] == "multi_file" and len(q["gold"]) >= 3)
    _edit_query(root, q["id"], lambda q: q.update(gold=q["gold"][:-1], closure=sorted(s["meeting_id"] for s in
                                                                                         q["gold"][:-1])))
    _reseal(root)


def corrupt_aggregation_answers(root: Path) -> None:
    q = _first(root, lambda q: q["rule"] == "R3-agg-count-files")
    _edit_query(root, q["id"], lambda q: q.update(answer=q["answer"] + 1))
    _reseal(root)


def corrupt_no_accidental_markers(root: Path) -> None:
    # a lookup subject said once more, in filler of a meeting where nobody planted it
    plants = _load(root, PLANTS)["plants"]
    subject = next(p for p in plants if p["role"] == "subject")
    planted_in = {m["meeting_id"] for m in subject["mentions"]}
    target = next(p.stem for p in sorted((root / "meetings").glob("*.json")) if p.stem not in planted_in)
    _edit_meeting(root, target, lambda m: m["turns"][0].update(text=f"Okay, first {subject['phrase']} came up."))
    _reseal(root)


def corrupt_codename_in_filler(root: Path) -> None:
    _edit_meeting(root, _any_meeting(root), lambda m: m["turns"][0].update(text="Okay, the Lantern thing first."))
    _reseal(root)


def corrupt_query_text(root: Path) -> None:
    q = _first(root, lambda q: q["rule"] == "R6-agg-speaker-top")
    _edit_query(root, q["id"], lambda q: q.update(text=q["text"][:-1] + f", {q['answer']['name']}?"))
    _reseal(root)


CORRUPTIONS: list[tuple[str, Callable[[Path], None], str]] = [
    ("manifest", corrupt_manifest, "sha256"),
    ("ids", corrupt_ids, "occurs 2 times"),
    ("titles_dates", corrupt_titles_dates, "expected"),
    ("rosters", corrupt_rosters, "order of first turn"),
    ("turn_timings", corrupt_turn_timings, "overlaps themselves"),
    ("lookup_gold", corrupt_lookup_gold, "outside its gold span"),
    ("multi_file_gold", corrupt_multi_file_gold, "the topic occurs in"),
    ("aggregation_answers", corrupt_aggregation_answers, "recomputed from the text"),
    ("no_accidental_markers", corrupt_no_accidental_markers, "by accident"),
    ("no_accidental_markers", corrupt_codename_in_filler, "codename word 'lantern'"),
    ("query_text", corrupt_query_text, "contains its answer"),
]


def test_the_ten_checks_are_named_in_order() -> None:
    assert list(CHECKS) == CHECK_NAMES


def test_generated_corpus_passes_every_check(corpus: Path) -> None:
    results = validate_or_raise(corpus)
    assert [r.name for r in results] == CHECK_NAMES
    assert all(r.passed and r.checked > 0 for r in results)


@pytest.mark.parametrize(("check", "corrupt", "detail"), CORRUPTIONS, ids=[c[1].__name__ for c in CORRUPTIONS])
def test_each_check_fails_by_name_on_its_corruption(
    corpus: Path, tmp_path: Path, check: str, corrupt: Callable[[Path], None], detail: str
) -> None:
    root = _copy(corpus, tmp_path)
    corrupt(root)
    results = {r.name: r for r in validate(root)}
    failed = sorted(name for name, r in results.items() if not r.passed)
    assert failed == [check]
    assert detail in (results[check].first_failure or "")
    with pytest.raises(ValidationError, match=f"check {check} failed"):
        validate_or_raise(root)


def test_cli_exits_7_naming_the_check_and_the_first_item(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _copy(corpus, tmp_path)
    q = _first(root, lambda q: q["rule"] == "R3-agg-count-files")
    corrupt_aggregation_answers(root)
    assert main(["synth", "validate", str(root)]) == 7
    err = capsys.readouterr().err
    assert "check aggregation_answers failed" in err and q["id"] in err


def test_cli_validate_passes_with_json(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth", "validate", str(corpus), "--json"]) == 0
    out = capsys.readouterr().out
    summary = json.loads(out[: out.rindex("}") + 1])
    assert sorted(summary) == sorted(CHECK_NAMES) and all(v["passed"] for v in summary.values())


def test_malformed_file_is_invalid_input_not_a_check(corpus: Path, tmp_path: Path) -> None:
    root = _copy(corpus, tmp_path)
    (root / QUERIES).write_text('{"queries": [{"id": 3}]}', encoding="utf-8")
    with pytest.raises(InputDataError, match=r"queries\.json"):
        validate(root)
    assert main(["synth", "validate", str(root)]) == 4
