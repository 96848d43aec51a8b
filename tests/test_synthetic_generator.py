"""The generator: byte-identical from a seed in any process, and gold planted as promised."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections import Counter
from itertools import pairwise
from pathlib import Path

import pytest

from harness.errors import UsageError
from harness.synthetic import vocab
from harness.synthetic.formats import (
    MANIFEST,
    PLANTS,
    QUERIES,
    RULE_COUNT_EVENTS,
    RULE_SPEAKER_TOP,
    RULE_TEMPORAL,
    RULES,
    tree_sha256,
)
from harness.synthetic.generator import generate
from harness.synthetic.seeds import derive_seed

ROOT = Path(__file__).resolve().parents[1]
SEED = 20260812
TITLE = re.compile(r"^(?P<team>[A-Za-z]+) — (?P<kind>[a-z ]+) #(?P<n>[0-9]+)$")


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return generate(SEED, 80, "easy")


def _meetings(files: dict[str, bytes]) -> list[dict]:
    return [json.loads(data) for path, data in sorted(files.items()) if path.startswith("meetings/")]


def _queries(files: dict[str, bytes]) -> list[dict]:
    return json.loads(files[QUERIES])["queries"]


def _cli_generate(out: Path, seed: int, hashseed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": hashseed}
    subprocess.run(
        [sys.executable, "-m", "harness", "synth", "generate", "--seed", str(seed), "--meetings", "60",
         "--out", str(out)],
        check=True, cwd=ROOT, env=env, capture_output=True, timeout=120,
    )


@pytest.mark.integration
def test_same_seed_same_bytes_in_separate_processes_whatever_the_hash_seed(tmp_path: Path) -> None:
    _cli_generate(tmp_path / "a", SEED, "1")
    _cli_generate(tmp_path / "b", SEED, "4242")
    listing_a = sorted(p.relative_to(tmp_path / "a").as_posix() for p in (tmp_path / "a").rglob("*"))
    listing_b = sorted(p.relative_to(tmp_path / "b").as_posix() for p in (tmp_path / "b").rglob("*"))
    assert listing_a == listing_b
    assert tree_sha256(tmp_path / "a") == tree_sha256(tmp_path / "b")
    # the in-process generator wrote the same bytes as both processes
    in_process = generate(SEED, 60)
    for rel, data in in_process.items():
        assert (tmp_path / "a" / rel).read_bytes() == data, rel
    # and a different seed is a different corpus
    other = generate(SEED + 1, 60)
    assert other[QUERIES] != in_process[QUERIES]
    assert other[MANIFEST] != in_process[MANIFEST]


def test_sub_seeds_are_sha256_of_the_labels_not_hash() -> None:
    expected = int.from_bytes(hashlib.sha256(b"7\x1fmeeting\x1fm00001").digest()[:8], "big")
    assert derive_seed(7, "meeting", "m00001") == expected
    assert derive_seed(7, "meeting", "m00002") != expected


def test_too_few_meetings_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="at least"):
        generate(SEED, 5, "easy")


def test_titles_dates_and_rosters(files: dict[str, bytes]) -> None:
    meetings = _meetings(files)
    assert len(meetings) == 80
    series: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for m in meetings:
        match = TITLE.match(m["title"])
        assert match, m["title"]
        assert match["team"] == m["team"] and m["team"] in vocab.TEAMS
        assert match["kind"] == m["kind"] and m["kind"] in vocab.KINDS
        assert int(match["n"]) == m["series_number"]
        assert "2024-01-01" <= m["recorded_date"] <= "2025-12-31"
        spoken = list(dict.fromkeys(t["speaker"] for t in m["turns"]))
        assert m["roster"] == spoken and len(spoken) >= 3
        series.setdefault((m["team"], m["kind"]), []).append((m["recorded_date"], m["series_number"]))
    for sessions in series.values():
        sessions.sort()
        assert [n for _, n in sessions] == list(range(1, len(sessions) + 1))


def test_turns_have_overlaps_shared_starts_and_backchannels(files: dict[str, bytes]) -> None:
    for m in _meetings(files):
        turns = m["turns"]
        assert 80 <= len(turns) <= 330, (m["meeting_id"], len(turns))
        keys = [(t["start"], t["end"], t["speaker"]) for t in turns]
        assert keys == sorted(keys) and len(set(keys)) == len(keys)
        shared = [(a, b) for a, b in pairwise(turns)
                  if a["start"] == b["start"] and a["speaker"] != b["speaker"]]
        assert shared, m["meeting_id"]
        backchannels = [
            t for i, t in enumerate(turns)
            if t["text"] in vocab.BACKCHANNELS
            and any(h["speaker"] != t["speaker"] and h["start"] < t["start"] and t["end"] < h["end"]
                    for h in turns[max(0, i - 5):i])
        ]
        assert backchannels, m["meeting_id"]
        for speaker in m["roster"]:
            own = [t for t in turns if t["speaker"] == speaker]
            assert all(b["start"] >= a["end"] for a, b in pairwise(own)), speaker


def test_every_class_and_rule_is_planted(files: dict[str, bytes]) -> None:
    queries = _queries(files)
    assert {q["query_class"] for q in queries} == {"lookup", "multi_file", "aggregation"}
    assert set(Counter(q["rule"] for q in queries if q["rule"])) == set(RULES)
    manifest = json.loads(files[MANIFEST])
    assert manifest["seed"] == SEED and manifest["meetings"] == 80
    assert manifest["queries"]["total"] == len(queries)


def test_aggregation_answers_by_construction(files: dict[str, bytes]) -> None:
    queries = _queries(files)
    plants = {p["phrase"]: p for p in json.loads(files[PLANTS])["plants"]}
    meetings = {m["meeting_id"]: m for m in _meetings(files)}
    for q in queries:
        if q["rule"] == RULE_COUNT_EVENTS:
            mentions = plants[q["phrase"]]["mentions"]
            assert q["answer"] == sum(x["count"] for x in mentions)
            assert q["answer"] > len({x["meeting_id"] for x in mentions})  # several times within one file
            assert max(x["count"] for x in mentions) == 2  # and twice within one turn
        if q["rule"] == RULE_TEMPORAL:
            months = [meetings[f]["recorded_date"][:7] for f in q["closure"]]
            assert q["answer"] == months.count(q["month"]) >= 1
            assert len(months) > q["answer"]  # mentioned outside the month too
        if q["rule"] == RULE_SPEAKER_TOP:
            attended = Counter(s for f in q["closure"] for s in meetings[f]["roster"])
            ranked = attended.most_common()
            assert ranked[0] == (q["answer"]["name"], q["answer"]["count"]) == (q["answer"]["name"], len(q["closure"]))
            assert ranked[1][1] < ranked[0][1]
        if q["rule"]:
            assert q["phrase"] is None or q["phrase"] in q["text"]
            answer = str(q["answer"]["name"] if isinstance(q["answer"], dict) else q["answer"])
            assert not re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", q["text"]), q["id"]


def test_lookup_gold_span_holds_the_fact_once(files: dict[str, bytes]) -> None:
    meetings = {m["meeting_id"]: m for m in _meetings(files)}
    all_text = "\n".join(t["text"] for m in meetings.values() for t in m["turns"])
    for q in _queries(files):
        if q["query_class"] != "lookup":
            continue
        (span,) = q["gold"]
        turns = meetings[span["meeting_id"]]["turns"][span["start_turn"]:span["end_turn"] + 1]
        assert sum(t["text"].count(q["fact"]) for t in turns) == 1
        assert all_text.count(q["fact"]) == 1
        assert q["fact"] not in q["text"] and q["phrase"] in q["text"]


def test_query_wording_varies() -> None:
    queries = _queries(generate(SEED, 150, "easy"))
    for group in ("lookup", "multi_file", *RULES):
        used = {q["template"] for q in queries if (q["rule"] or q["query_class"]) == group}
        assert len(used) >= 2, group
    multi = [q["text"] for q in queries if q["query_class"] == "multi_file"]
    assert any(text.startswith("Across the ") and " sessions for the " in text for text in multi)
