"""harness.index.ingest, run eagerly: index_file, the shard sink, assembly, the report checks.

Unit tests: SQLite store, an in-process ledger and a hash embedder (vectors depend on the
text alone, not on the batch it arrives in), so nothing needs a service or a model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.commands.corpus import read_corpus
from harness.errors import IntegrityError, RefusedError
from harness.index.chunking import ChunkingPolicy
from harness.index.documents import meeting_documents
from harness.index.ingest.assemble import assemble_embedded_index
from harness.index.ingest.coordinator import check_report, meeting_from_segments, run_eager
from harness.index.ingest.ledger import MemoryLedger
from harness.index.ingest.messages import ReindexReport, ReindexRequest, SinkSpec, StoreSpec, SweepReport
from harness.index.ingest.sinks import ShardSink
from harness.index.sentences import SPLITTER_IDENTITY
from harness.model import Meeting, Turn, file_uuid_for, word_count
from harness.state.build import build_state
from harness.store import Segment, SqliteStore

FIXTURE = Path(__file__).parent / "fixtures" / "qmsum"


class HashEmbedder:
    """Unit vectors from a text's sha256: the same text gives the same vector in any batch."""

    def __init__(self, identity: str = "hash-embedder@1", dimension: int = 8) -> None:
        self.identity = identity
        self.dimension = dimension
        self.calls = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        rows = []
        for text in texts:
            if "EXPLODE" in text:
                raise RuntimeError("the embedder refused this text")
            raw = np.frombuffer(hashlib.sha256(text.encode("utf-8")).digest(), dtype=np.uint8)[: self.dimension]
            v = raw.astype(np.float32) - 127.5
            rows.append(v / np.linalg.norm(v))
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dimension)


def meeting(source_id: str, lines: list[tuple[str, float, float, str]]) -> Meeting:
    return Meeting(corpus="hand", source_id=source_id, file_uuid=file_uuid_for("hand", source_id),
                   title=f"Hand — {source_id}", timings_real=True, tier="A", licence="CC0-1.0",
                   turns=tuple(Turn(index=i, speaker=s, start=a, end=b, text=t, words=word_count(t))
                               for i, (s, a, b, t) in enumerate(lines)))


# Turn order is not time order; turns 0 and 1 share an onset (a 10 ms backchannel over a
# 1.25 s utterance), turns 2 and 3 share onset and end. Chronological: 4, 1, 0, 2, 3.
TIES = meeting("ties", [
    ("Alice", 471.983, 473.233, "I mean, if you did it at the start."),
    ("Bob", 471.983, 471.993, "Uh-huh."),
    ("Carol", 480.0, 481.0, "Right."),
    ("Bob", 480.0, 481.0, "Right, agreed."),
    ("Alice", 12.5, 20.0, "Earlier we said something else."),
])


def _request(tmp_path: Path, store_file: Path, **changes: Any) -> ReindexRequest:
    request = ReindexRequest(store=StoreSpec("sqlite", str(store_file)),
                                    sink=SinkSpec("embedded", str(tmp_path / "shards")),
                                    embedding={"header": "object:hash-embedder@1"})
    return replace(request, **changes)


def _store(tmp_path: Path, *meetings: Meeting) -> Path:
    path = tmp_path / "store.sqlite"
    with SqliteStore.open(path) as store:
        store.inject(meetings)
    return path


# -- index_file ----------------------------------------------------------------------------


def test_index_file_chunks_the_stores_segments_in_their_total_order(tmp_path: Path) -> None:
    report = run_eager(_request(tmp_path, _store(tmp_path, TIES)), {"header": HashEmbedder()})
    assert report.sweep.ran and report.indexed == [TIES.file_uuid]
    docs, vectors, meta = ShardSink(tmp_path / "shards").read(TIES.file_uuid)
    chunks = [d for d in docs if d.doc_type == "chunk"]
    # chronological (start, end, id): turn 4, the backchannel 1 before the utterance 0 it
    # overlaps, then Carol before Bob (same span, lower id); no two neighbours share a speaker
    assert [(c.id, c.speaker, c.content) for c in chunks] == [
        (f"{TIES.file_uuid}_0", "Alice", "Earlier we said something else."),
        (f"{TIES.file_uuid}_1", "Bob", "Uh-huh."),
        (f"{TIES.file_uuid}_2", "Alice", "I mean, if you did it at the start."),
        (f"{TIES.file_uuid}_3", "Carol", "Right."),
        (f"{TIES.file_uuid}_4", "Bob", "Right, agreed."),
    ]
    assert docs == meeting_documents(TIES, ChunkingPolicy())
    assert vectors["header"].shape == (len(docs), 8) and vectors["header"].dtype == np.float32
    assert meta["splitter"] == SPLITTER_IDENTITY and meta["embedding"] == {"header": "hash-embedder@1"}
    result = report.results[0]
    assert (result["status"], result["segments"], result["chunk_documents"]) == ("indexed", 5, 5)
    assert result["splitter"] == SPLITTER_IDENTITY and result["worker"]["splitter"] == SPLITTER_IDENTITY


def test_a_long_monologue_is_cut_by_the_pinned_splitter_in_the_task(tmp_path: Path) -> None:
    sentence = "This is one plain sentence of eight words."
    monologue = meeting("mono", [("Dana", 0.0, 300.0, " ".join([sentence] * 30))])   # 240 words
    run_eager(_request(tmp_path, _store(tmp_path, monologue), max_words=100), {"header": HashEmbedder()})
    docs, _, meta = ShardSink(tmp_path / "shards").read(monologue.file_uuid)
    chunks = [d for d in docs if d.doc_type == "chunk"]
    # whole sentences packed up to 100 words: 12 sentences (96 words), 12, then 6 (48)
    assert [len(c.content.split()) for c in chunks] == [96, 96, 48]
    assert meta["chunking"]["max_words"] == 100


def test_a_file_that_fails_is_recorded_failed_and_the_others_are_indexed(tmp_path: Path) -> None:
    good, bad = meeting("good", [("A", 0.0, 1.0, "fine")]), meeting("bad", [("B", 0.0, 1.0, "EXPLODE now")])
    report = run_eager(_request(tmp_path, _store(tmp_path, good, bad)), {"header": HashEmbedder()})
    assert report.indexed == [good.file_uuid] and report.failed == [bad.file_uuid]
    failed = next(r for r in report.results if r["status"] == "failed")
    assert failed["error"] == "RuntimeError: the embedder refused this text"
    assert report.sweep.ran                     # indexed + failed accounts for both files
    assert ShardSink(tmp_path / "shards").files() == {good.file_uuid}


def test_a_file_without_segments_is_indexed_with_no_documents(tmp_path: Path) -> None:
    empty = meeting("empty", [])
    report = run_eager(_request(tmp_path, _store(tmp_path, empty)), {"header": HashEmbedder()})
    assert report.indexed == [empty.file_uuid] and report.results[0]["documents"] == 0
    docs, vectors, _ = ShardSink(tmp_path / "shards").read(empty.file_uuid)
    assert docs == [] and vectors["header"].shape == (0, 8)


def test_the_snapshot_refuses_files_the_store_does_not_hold(tmp_path: Path) -> None:
    ledger = MemoryLedger()
    request = _request(tmp_path, _store(tmp_path, TIES), files=(TIES.file_uuid, "not-there"))
    with pytest.raises(Exception, match="not in the store"):
        run_eager(request, {"header": HashEmbedder()}, ledger=ledger)
    assert ledger.locks == {}                   # the lock does not outlive a refused start


def test_store_and_chunker_orders_must_agree() -> None:
    header = TIES.model_dump(mode="json", exclude={"turns"})

    def seg(seg_id: int, turn: int, start: float, end: float) -> Segment:
        return Segment(id=seg_id, file_uuid=TIES.file_uuid, turn_index=turn, speaker="A", start_time=start,
                       end_time=end, text="x", words=1)

    ordered = [seg(1, 0, 5.0, 6.0), seg(2, 1, 5.0, 6.0)]
    assert [t.index for t in meeting_from_segments(header, ordered).turns] == [0, 1]
    # ids that do not ascend in turn order: the store reads 1 before 0, the chunker 0 before 1
    swapped = [seg(1, 1, 5.0, 6.0), seg(2, 0, 5.0, 6.0)]
    with pytest.raises(IntegrityError, match="order differs"):
        meeting_from_segments(header, swapped)


# -- the shard sink -------------------------------------------------------------------------


def test_shard_sink_replaces_a_file_whole_and_deletes_by_file(tmp_path: Path) -> None:
    sink = ShardSink(tmp_path / "shards")
    docs = meeting_documents(TIES, ChunkingPolicy())
    first = sink.write_file(TIES.file_uuid, docs, {"header": np.zeros((len(docs), 2), np.float32)}, {"p": 1})
    second = sink.write_file(TIES.file_uuid, docs[:2], {"header": np.ones((2, 2), np.float32)}, {"p": 2})
    assert first != second
    read_docs, vectors, meta = sink.read(TIES.file_uuid)
    assert read_docs == docs[:2] and vectors["header"].tolist() == [[1.0, 1.0], [1.0, 1.0]] and meta["p"] == 2
    assert [p.name for p in (tmp_path / "shards").iterdir()] == [f"{TIES.file_uuid}.shard"]  # no temporaries left
    assert sink.files() == {TIES.file_uuid}
    assert sink.delete_files([TIES.file_uuid, "never-written"]) == 2
    assert sink.files() == set()


def test_clearing_shards_never_deletes_what_else_is_in_the_folder(tmp_path: Path) -> None:
    sink = ShardSink(tmp_path / "shards")
    docs = meeting_documents(TIES, ChunkingPolicy())
    sink.write_file(TIES.file_uuid, docs, {"header": np.zeros((len(docs), 2), np.float32)}, {})
    (tmp_path / "shards" / "notes.txt").write_text("the user's\n")
    sink.clear()
    assert [p.name for p in (tmp_path / "shards").iterdir()] == ["notes.txt"]
    (tmp_path / "shards" / "notes.txt").unlink()
    sink.clear()
    assert not (tmp_path / "shards").exists()


def test_a_shard_whose_bytes_changed_is_refused_not_assembled(tmp_path: Path) -> None:
    sink = ShardSink(tmp_path / "shards")
    docs = meeting_documents(TIES, ChunkingPolicy())
    sink.write_file(TIES.file_uuid, docs, {"header": np.zeros((len(docs), 2), np.float32)}, {})
    shard = tmp_path / "shards" / f"{TIES.file_uuid}.shard"
    raw = bytearray(shard.read_bytes())
    at = raw.index(b"\x93NUMPY")          # flip a byte of the vectors, keep the tar well formed
    raw[at + 130] ^= 0xFF                   # the .npy header is 128 bytes: this is a vector byte
    shard.write_bytes(bytes(raw))
    with pytest.raises(IntegrityError, match="do not match the sha256"):
        sink.read(TIES.file_uuid)
    shard.write_bytes(b"not a tar")
    with pytest.raises(IntegrityError, match="not a shard"):
        sink.read(TIES.file_uuid)


# -- assembly and the state build ------------------------------------------------------------


def _tree(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file() and "tantivy" not in p.parts}


def test_eager_state_equals_the_in_process_build_when_vectors_do_not_depend_on_batching(tmp_path: Path) -> None:
    corpus = read_corpus("qmsum", FIXTURE, FIXTURE / "SOURCES.tsv")
    direct = build_state(tmp_path / "direct", [corpus], {"header": HashEmbedder()})
    eager = build_state(tmp_path / "eager", [corpus], {"header": HashEmbedder()}, dispatch="eager")
    # one content address (ingest.json, how it ran, is checked but not addressed)
    assert direct["contents"]["identity"] == eager["contents"]["identity"]
    assert {k: v for k, v in direct.items() if k != "contents"} == {k: v for k, v in eager.items() if k != "contents"}
    a, b = _tree(tmp_path / "direct"), _tree(tmp_path / "eager")
    assert b.pop("ingest.json") and "ingest.json" not in a
    a.pop("state.json"), b.pop("state.json")     # their contents blocks name other tantivy segment files
    assert a == b                                # store, docs.jsonl, vectors, meta: byte for byte
    assert not (tmp_path / "eager" / "shards").exists()
    record = json.loads((tmp_path / "eager" / "ingest.json").read_text())
    assert (record["dispatch"], record["files"], record["indexed"], record["failed"]) == ("eager", 4, 4, 0)
    assert record["sweep"]["ran"] and record["splitter"] == SPLITTER_IDENTITY
    assert sum(f["chunk_documents"] for f in record["per_file"]) == direct["index"]["chunk_documents"] == 56


def test_a_cache_the_host_warms_answers_every_task_and_a_warm_rebuild_encodes_nothing(tmp_path: Path) -> None:
    corpus = read_corpus("qmsum", FIXTURE, FIXTURE / "SOURCES.tsv")
    direct = build_state(tmp_path / "direct", [corpus], {"header": HashEmbedder()})
    cache = tmp_path / "cache"
    counts = []
    for name in ("cold", "warm"):
        embedder = HashEmbedder()  # a new model object each time: the counts are the cache folder's, not a memo's
        built = build_state(tmp_path / name, [corpus], {"header": embedder}, dispatch="eager", embedding_cache=cache)
        assert built["contents"]["identity"] == direct["contents"]["identity"], name  # the same vectors, cached or not
        a, b = _tree(tmp_path / "direct"), _tree(tmp_path / name)
        b.pop("ingest.json"), a.pop("state.json"), b.pop("state.json")
        a.pop("build.json"), b.pop("build.json")  # where the vectors came from: provenance, not the state's bytes
        assert a == b, name
        vectors = json.loads((tmp_path / name / "build.json").read_text())["vectors"]
        record = json.loads((tmp_path / name / "ingest.json").read_text())["embedding_cache"]
        assert vectors == record["vectors"] and vectors[0]["encoded"] == record["warm_up"]["encoded"]
        assert record["root"] == str(cache.resolve())
        counts.append((record["warm_up"], record["tasks"], embedder.calls))
    (cold_warm, cold_tasks, cold_calls), (warm_warm, warm_tasks, warm_calls) = counts
    # cold: the host encodes every distinct text once; the tasks find them all
    assert cold_warm["encoded"] > 0 and cold_warm["hits"] == 0 and cold_calls > 0
    assert cold_tasks == {"hits": cold_warm["encoded"], "encoded": 0}
    # warm: nothing is encoded anywhere, the model is never called
    assert warm_warm == {"hits": cold_warm["encoded"], "encoded": 0} and warm_calls == 0
    assert warm_tasks == {"hits": cold_warm["encoded"], "encoded": 0}


def test_assembly_refuses_shards_from_two_models(tmp_path: Path) -> None:
    one, two = meeting("one", [("A", 0.0, 1.0, "a b c")]), meeting("two", [("B", 0.0, 1.0, "d e f")])
    sink = ShardSink(tmp_path / "shards")
    for m, model in ((one, "hash-embedder@1"), (two, "other@2")):
        docs = meeting_documents(m, ChunkingPolicy())
        sink.write_file(m.file_uuid, docs, {"header": np.ones((len(docs), 2), np.float32)},
                        {"embedding": {"header": model}})
    with pytest.raises(RefusedError, match="mixed vector space"):
        assemble_embedded_index(sink, tmp_path / "index", sorted([one.file_uuid, two.file_uuid]))
    assert not (tmp_path / "index").exists()


def test_assembly_needs_every_file_of_the_snapshot(tmp_path: Path) -> None:
    with pytest.raises(IntegrityError, match="did not index it"):
        assemble_embedded_index(ShardSink(tmp_path / "shards"), tmp_path / "index", [TIES.file_uuid])


# -- the report checks ----------------------------------------------------------------------------


@pytest.fixture
def good_report(tmp_path: Path) -> ReindexReport:
    return run_eager(_request(tmp_path, _store(tmp_path, TIES)), {"header": HashEmbedder()})


def _doctored(report: ReindexReport, **changes: Any) -> ReindexReport:
    results: tuple[Mapping[str, Any], ...] = tuple({**r, **changes} for r in report.results)
    return replace(report, results=results)


def test_check_report_passes_a_complete_uniform_run(good_report: ReindexReport) -> None:
    check_report(good_report, policy=ChunkingPolicy(), embedding={"header": "hash-embedder@1"})


@pytest.mark.parametrize(("changes", "error", "match"), [
    # the punkt lesson: a worker whose splitter differs cut a different index
    ({"splitter": "punkt/3.8"}, IntegrityError, "splitter"),
    ({"chunking": {**ChunkingPolicy(max_words=50).to_dict()}}, IntegrityError, "chunked with"),
    ({"embedding": {"header": "another-model@x"}}, RefusedError, "vector space"),
    ({"status": "failed", "error": "boom"}, IntegrityError, "failed"),
])
def test_check_report_refuses(good_report: ReindexReport, changes: dict[str, Any],
                              error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        check_report(_doctored(good_report, **changes), policy=ChunkingPolicy(),
                            embedding={"header": "hash-embedder@1"})


def test_check_report_refuses_files_encoded_under_two_rules(good_report: ReindexReport) -> None:
    first, *rest = good_report.results
    mixed = replace(good_report, results=({**first, "encoder": {"header": "another batching"}}, first, *rest))
    with pytest.raises(RefusedError, match="2 rules"):
        check_report(mixed, policy=ChunkingPolicy(), embedding={"header": "hash-embedder@1"})


def test_check_report_refuses_a_declined_sweep(good_report: ReindexReport) -> None:
    declined = replace(good_report, sweep=SweepReport(False, "declined: test"))
    with pytest.raises(IntegrityError, match="incomplete"):
        check_report(declined, policy=ChunkingPolicy(), embedding={"header": "hash-embedder@1"})


def test_requests_and_reports_round_trip_through_json(good_report: ReindexReport, tmp_path: Path) -> None:
    request = _request(tmp_path, tmp_path / "s.sqlite", files=("a", "b"))
    assert ReindexRequest.from_dict(json.loads(json.dumps(request.to_dict()))) == request
    cached = replace(request, embedding_cache=str(tmp_path / "cache"))
    assert ReindexRequest.from_dict(json.loads(json.dumps(cached.to_dict()))) == cached
    assert ReindexReport.from_dict(json.loads(json.dumps(good_report.to_dict()))) == good_report
