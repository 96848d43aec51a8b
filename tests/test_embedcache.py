"""The embedding cache (harness.index.embedcache): only unseen texts are encoded, and a state's
index files are byte-identical whether the cache was cold or warm.

The fake embedder's vectors depend on the batch a text arrives in (as sentence-transformers'
can, in the last bits), so these tests would see a cache that re-encoded anything.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from harness.commands.corpus import read_corpus
from harness.errors import IntegrityError
from harness.index.documents import doc_from_record, embedding_text
from harness.index.embedcache import CachingEmbedder, model_folder_name, model_key
from harness.model import Corpus
from harness.state.build import build_state

FIXTURE = Path(__file__).parent / "fixtures" / "qmsum"


class BatchEmbedder:
    """Unit vectors from a text's sha256, nudged by the size of the batch it came in; records every call."""

    def __init__(self, identity: str = "batch-fake@sha256:0001", dimension: int = 8) -> None:
        self.identity = identity
        self.dimension = dimension
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = []
        for text in texts:
            raw = np.frombuffer(hashlib.sha256((self.identity + text).encode("utf-8")).digest(), dtype=np.uint8)
            v = raw[: self.dimension].astype(np.float32) - 127.5 + np.float32(len(texts)) * np.float32(1e-3)
            rows.append(v / np.linalg.norm(v))
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dimension)

    def describe(self) -> dict[str, object]:
        return {"identity": self.identity, "spec": "anywhere", "dimension": self.dimension, "normalised": True}

    @property
    def encoded(self) -> list[str]:
        return [t for call in self.calls for t in call]


def _part(corpus: Corpus, meetings: slice) -> Corpus:
    """Some of the corpus's meetings and the queries whose gold lies in them (state build checks that it does)."""
    kept = corpus.meetings[meetings]
    files = {m.file_uuid for m in kept}
    return corpus.model_copy(update={"meetings": kept,
                                     "queries": tuple(q for q in corpus.queries if set(q.gold_files) <= files)})


def _index_files(state: Path) -> dict[str, bytes]:
    """The index's files, state.json's claim and the state's identity (state.json's contents block names
    tantivy's segment files, whose names are random: the identity addresses them by content)."""
    claim = json.loads((state / "state.json").read_text())
    identity = claim.pop("contents")["identity"]
    return {p.name: p.read_bytes() for p in sorted((state / "index").iterdir()) if p.is_file()} | {
        "state.json": json.dumps(claim, sort_keys=True).encode(), "identity": identity.encode()}


def test_a_warm_rebuild_encodes_nothing_and_writes_the_same_bytes(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    corpus = read_corpus("qmsum", FIXTURE, FIXTURE / "SOURCES.tsv")
    cache = tmp_path / "cache"
    cold_model, warm_model = BatchEmbedder(), BatchEmbedder()
    build_state(tmp_path / "cold", [corpus], {"header": cold_model, "body": cold_model}, embedding_cache=cache)
    build_state(tmp_path / "warm", [corpus], {"header": warm_model, "body": warm_model}, embedding_cache=cache)
    cold, warm = _index_files(tmp_path / "cold"), _index_files(tmp_path / "warm")
    assert {"docs.jsonl", "meta.json", "vectors-header.npy", "vectors-body.npy", "state.json"} <= set(cold)
    assert cold == warm                      # docs.jsonl, vectors-*.npy, meta.json, state.json: byte for byte
    assert warm_model.calls == []            # not one text encoded
    n = len(cold_model.encoded)
    said = [line for line in capsys.readouterr().err.splitlines() if "embedding cache" in line]
    assert [line.split(": ", 1)[1] for line in said] == [f"0 texts cached, {n} encoded", f"{n} texts cached, 0 encoded"]
    texts = cold_model.encoded               # the cold build: sorted unique texts, one call (under the piece size)
    assert len(cold_model.calls) == 2 and all(c == sorted(set(c)) for c in cold_model.calls)
    assert len(texts) == len(set(texts))
    block = json.loads(cold["meta.json"])["embedding"]["header"]
    assert block == {"model": "batch-fake@sha256:0001", "dimension": 8, "file": "vectors-header.npy"}
    assert json.loads(cold["state.json"])["index"]["embedding"]["header"] == block  # nothing about the cache


def test_the_cached_vectors_are_the_models_bytes_and_a_build_without_the_cache_is_unchanged(tmp_path: Path) -> None:
    corpus = read_corpus("qmsum", FIXTURE, FIXTURE / "SOURCES.tsv")
    build_state(tmp_path / "plain", [corpus], {"header": BatchEmbedder()})
    model = BatchEmbedder()
    build_state(tmp_path / "cached", [corpus], {"header": model}, embedding_cache=tmp_path / "cache")
    plain, cached = _index_files(tmp_path / "plain"), _index_files(tmp_path / "cached")
    assert plain["meta.json"] == cached["meta.json"] and plain["docs.jsonl"] == cached["docs.jsonl"]
    # this fake depends on its batch, so here the cache's batches (sorted unique misses) and the plain
    # build's windows give other bytes; each cached vector is what the model returned for its batch
    vectors = np.load(tmp_path / "cached" / "index" / "vectors-header.npy")
    docs = [json.loads(line) for line in cached["docs.jsonl"].decode().splitlines()]
    batch = model.calls[0]
    expected = BatchEmbedder().encode(batch)
    for row, doc in enumerate(docs):
        got = vectors[row].tobytes()
        assert got == expected[batch.index(embedding_text(doc_from_record(doc), "header"))].tobytes()


def test_adding_texts_encodes_only_the_new_ones(tmp_path: Path) -> None:
    model = BatchEmbedder()
    cache = CachingEmbedder(model, tmp_path, piece=2)
    first = cache.encode(["b", "a", "b"])
    assert model.calls == [["a", "b"]]
    second = cache.encode(["c", "a", "e", "d", "b"])
    assert model.calls[1:] == [["c", "d"], ["e"]]   # sorted unique misses, `piece` per call
    assert second[1].tobytes() == first[1].tobytes() and second[4].tobytes() == first[0].tobytes()
    assert (cache.hits, cache.encoded) == (0, 2 + 3)  # distinct texts; its own are not counted as hits
    assert cache.encode(["a"]).tobytes() == first[1].tobytes() and (cache.hits, cache.encoded) == (0, 5)
    again = CachingEmbedder(BatchEmbedder(), tmp_path)   # a new process: reads the shards from disk
    assert again.encode(["e", "a"]).tobytes() == np.stack([second[2], first[1]]).tobytes()
    assert again.inner.calls == [] and (again.hits, again.encoded) == (2, 0)  # type: ignore[attr-defined]


def test_adding_a_corpus_to_a_state_encodes_only_its_texts(tmp_path: Path) -> None:
    corpus = read_corpus("qmsum", FIXTURE, FIXTURE / "SOURCES.tsv")
    part = _part(corpus, slice(0, 2))
    small, full = BatchEmbedder(), BatchEmbedder()
    build_state(tmp_path / "small", [part], {"header": small}, embedding_cache=tmp_path / "cache")
    build_state(tmp_path / "full", [corpus], {"header": full}, embedding_cache=tmp_path / "cache")
    assert small.encoded and full.encoded
    assert not set(small.encoded) & set(full.encoded)
    fresh = BatchEmbedder()
    build_state(tmp_path / "fresh", [corpus], {"header": fresh}, embedding_cache=tmp_path / "cold")
    assert sorted(small.encoded + full.encoded) == sorted(fresh.encoded)


def test_another_model_never_reads_the_others_entries(tmp_path: Path) -> None:
    one, two = BatchEmbedder("model@sha256:aaaa"), BatchEmbedder("model@sha256:bbbb")
    a = CachingEmbedder(one, tmp_path).encode(["x", "y"])
    b = CachingEmbedder(two, tmp_path).encode(["x", "y"])
    assert two.calls == [["x", "y"]]
    assert a.tobytes() != b.tobytes()
    folders = sorted(p.name for p in tmp_path.iterdir())
    assert len(folders) == 2 and folders[0].startswith("model_sha256_aaaa-")
    # same identity, but a different max_seq_length (say): a different key and folder too
    longer = BatchEmbedder("model@sha256:aaaa")
    longer.describe = lambda: {"identity": "model@sha256:aaaa", "max_seq_length": 512}  # type: ignore[method-assign]
    assert model_folder_name(model_key(longer)) != model_folder_name(model_key(one))
    CachingEmbedder(longer, tmp_path).encode(["x"])
    assert longer.calls == [["x"]]


def test_vectors_of_another_encoder_rule_are_never_read(tmp_path: Path) -> None:
    """Same weights, another batching rule (rows per pass, torch, cpu): another key, encoded afresh."""
    one, two = BatchEmbedder(), BatchEmbedder()
    one.describe = lambda: {**BatchEmbedder().describe(), "encoder": "rule a"}  # type: ignore[method-assign]
    two.describe = lambda: {**BatchEmbedder().describe(), "encoder": "rule b"}  # type: ignore[method-assign]
    CachingEmbedder(one, tmp_path).encode(["x", "y"])
    CachingEmbedder(two, tmp_path).encode(["y", "x"])
    assert two.calls == [["x", "y"]] and len(list(tmp_path.iterdir())) == 2


def test_the_spec_is_not_part_of_the_key(tmp_path: Path) -> None:
    one, two = BatchEmbedder(), BatchEmbedder()
    two.describe = lambda: {**BatchEmbedder().describe(), "spec": "/elsewhere"}  # type: ignore[method-assign]
    CachingEmbedder(one, tmp_path).encode(["x"])
    CachingEmbedder(two, tmp_path).encode(["x"])
    assert two.calls == []


@pytest.mark.parametrize("damage", ["truncate-vectors", "flip-vector-byte", "flip-key-byte", "bad-record"])
def test_a_damaged_shard_is_detected_set_aside_and_never_used(tmp_path: Path, damage: str) -> None:
    good = CachingEmbedder(BatchEmbedder(), tmp_path).encode(["p", "q", "r"])
    folder = next(tmp_path.iterdir())
    (name,) = {p.stem for p in folder.glob("0*.json")}
    vec, keys, record = folder / f"{name}.vec", folder / f"{name}.keys", folder / f"{name}.json"
    if damage == "truncate-vectors":
        vec.write_bytes(vec.read_bytes()[:-4])
    elif damage == "flip-vector-byte":
        data = bytearray(vec.read_bytes())
        data[5] ^= 0x01
        vec.write_bytes(bytes(data))
    elif damage == "flip-key-byte":
        data = bytearray(keys.read_bytes())
        data[0] ^= 0x01
        keys.write_bytes(bytes(data))
    else:
        record.write_text("{not json", encoding="utf-8")
    warnings: list[str] = []
    model = BatchEmbedder()
    again = CachingEmbedder(model, tmp_path, warn=warnings.append).encode(["p", "q", "r"])
    assert model.calls == [["p", "q", "r"]]          # encoded again, nothing read from the damaged shard
    assert again.tobytes() == good.tobytes()          # the fake's vectors for the same batch
    assert len(warnings) == 1 and "corrupt" in warnings[0] and "\n" not in warnings[0]
    assert not record.exists() and record.with_name(record.name + ".corrupt").exists()
    third = BatchEmbedder()
    CachingEmbedder(third, tmp_path, warn=warnings.append).encode(["q"])
    assert third.calls == [] and len(warnings) == 1  # the new shard answers; the old one is not looked at


def test_a_shard_changed_after_it_was_read_is_not_consulted(tmp_path: Path) -> None:
    cache = CachingEmbedder(BatchEmbedder(), tmp_path)
    first = cache.encode(["p"])
    vec = next(tmp_path.glob("*/0*.vec"))
    vec.write_bytes(b"\0" * len(vec.read_bytes()))
    assert cache.encode(["p"]).tobytes() == first.tobytes()  # verified bytes were kept in memory


# -- a cache that cannot be poisoned (issue 51) ------------------------------------------------------

class NanOnce(BatchEmbedder):
    """The model gone wrong for one text: NaN for "poison", the fake's vectors for the others."""

    def encode(self, texts: list[str]) -> np.ndarray:
        out = super().encode(texts)
        out[[i for i, t in enumerate(texts) if t == "poison"]] = np.nan
        return out


def _shard_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("0*") if p.is_file())


def test_a_nan_encode_fails_naming_the_text_and_caches_nothing(tmp_path: Path) -> None:
    """On e2cb9a0 the NaN was committed as a shard before the build's own check failed, and every later build
    read it back and failed (exit 5, "rebuild the state", which could not work)."""
    with pytest.raises(IntegrityError, match=r"^batch-fake@sha256:0001 returned a vector that is not a finite unit "
                                             r"vector for the text 'poison' \(1 of 2 texts in its call\)"):
        CachingEmbedder(NanOnce(), tmp_path).encode(["a", "poison"])
    assert _shard_files(tmp_path) == []  # nothing cached: not the NaN, not its batch-mate
    model = BatchEmbedder()
    vectors = CachingEmbedder(model, tmp_path).encode(["a", "poison"])
    assert model.calls == [["a", "poison"]] and np.isfinite(vectors).all()


def _forge(folder: Path, vectors: np.ndarray) -> Path:
    """Replace the one shard's vectors and re-record their sha256 in its record, as a forger (or an encoder's
    NaN written by e2cb9a0, whose digest was taken over the NaN) leaves it."""
    (record,) = folder.glob("0*.json")
    data = np.ascontiguousarray(vectors, dtype="<f4").tobytes()
    (folder / f"{record.stem}.vec").write_bytes(data)
    body = json.loads(record.read_text())
    body["vectors_sha256"] = hashlib.sha256(data).hexdigest()
    record.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")
    return record


@pytest.mark.parametrize("forgery", ["nan", "zero", "doubled", "infinite"])
def test_a_shard_whose_digest_covers_bad_vectors_is_set_aside_and_its_texts_encoded_again(
        tmp_path: Path, forgery: str) -> None:
    good = CachingEmbedder(BatchEmbedder(), tmp_path).encode(["p", "q", "r"])
    folder = next(tmp_path.iterdir())
    bad = {"nan": np.where(np.arange(3)[:, None] == 1, np.nan, good), "zero": np.zeros_like(good),
           "doubled": good * 2, "infinite": np.where(np.arange(3)[:, None] == 2, np.inf, good)}[forgery]
    record = _forge(folder, bad)
    warnings: list[str] = []
    model = BatchEmbedder()
    again = CachingEmbedder(model, tmp_path, warn=warnings.append).encode(["p", "q", "r"])
    assert model.calls == [["p", "q", "r"]] and again.tobytes() == good.tobytes()
    row, more = {"nan": (1, 0), "zero": (0, 2), "doubled": (0, 2), "infinite": (2, 0)}[forgery]
    assert warnings == [f"embedding cache shard {folder / record.stem} is corrupt (row {row} (and {more} more) is not "
                        f"a finite unit vector); set aside as {record.stem}.json.corrupt, its texts are encoded again"]
    assert not record.exists() and record.with_name(record.name + ".corrupt").exists()


def test_a_poisoned_cache_no_longer_fails_every_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = read_corpus("qmsum", FIXTURE, FIXTURE / "SOURCES.tsv")
    cache = tmp_path / "cache"
    build_state(tmp_path / "first", [corpus], {"header": BatchEmbedder()}, embedding_cache=cache)
    folder = next(cache.iterdir())
    (record,) = folder.glob("0*.json")
    vectors = np.fromfile(folder / f"{record.stem}.vec", dtype="<f4").reshape(-1, 8)
    _forge(folder, np.where(np.arange(len(vectors))[:, None] == 7, np.nan, vectors))
    capsys.readouterr()
    build_state(tmp_path / "second", [corpus], {"header": BatchEmbedder()}, embedding_cache=cache)
    warned = [line for line in capsys.readouterr().err.splitlines() if "corrupt" in line]
    assert len(warned) == 1 and f"{record.stem}.json.corrupt" in warned[0]
    assert _index_files(tmp_path / "second")["vectors-header.npy"] == _index_files(tmp_path / "first")[
        "vectors-header.npy"]


# -- the real model: the cache changes no byte -----------------------------------------------------

@pytest.fixture(scope="module")
def minilm() -> object:
    pytest.importorskip("sentence_transformers")
    from harness.index.embed import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def test_with_the_real_model_cold_warm_and_uncached_states_are_byte_identical(tmp_path: Path, minilm: object) -> None:
    corpus = read_corpus("qmsum", FIXTURE, FIXTURE / "SOURCES.tsv")
    part = _part(corpus, slice(1, 3))
    cache = tmp_path / "cache"
    # another state first, so the cold build finds some of its texts computed beside other batch-mates
    build_state(tmp_path / "part", [part], {"header": minilm}, embedding_cache=cache)  # type: ignore[dict-item]
    for name, root in (("cold", cache), ("warm", cache), ("none", None)):
        build_state(tmp_path / name, [corpus], {"header": minilm, "body": minilm},  # type: ignore[dict-item]
                    embedding_cache=root)
    cold, warm, none = (_index_files(tmp_path / n) for n in ("cold", "warm", "none"))
    assert cold == warm == none
    from harness.index.embed import SentenceTransformerEmbedder
    from harness.index.encoder import Batching

    assert isinstance(minilm, SentenceTransformerEmbedder)
    other = SentenceTransformerEmbedder.__new__(SentenceTransformerEmbedder)
    other.__dict__.update({**minilm.__dict__, "batching": Batching(max_rows=16)})
    assert model_folder_name(model_key(other)) != model_folder_name(model_key(minilm))  # the rule is in the key
