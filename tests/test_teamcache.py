"""The team's embedding cache (harness.index.teamcache): a shared tier under every machine's cache.

Two "machines" here are two machine-cache roots with two embedders that give the same text other last
bits (as AVX-512 and AVX2 do), under one contract. With the tier they build states with one identity;
without it, two. The tier is a folder here (a LocalFolderStore: what a team's NFS mount would be) and the
stack's S3 server in the integration test at the end.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.commands.corpus import read_corpus
from harness.errors import StorageError
from harness.index.embedcache import CachingEmbedder, contract_key, model_key
from harness.index.encoder import numerical_path, without_numerical_path
from harness.index.teamcache import TeamCachingEmbedder
from harness.index.teamtier import BadEntry, SharedTier, pack, unpack
from harness.objectstore import LocalFolderStore
from harness.state import verified_identity
from harness.state.build import build_state

FIXTURE = Path(__file__).parent / "fixtures" / "qmsum"


class PathEmbedder:
    """Unit vectors from a text's sha256, nudged by ``path`` (a CPU's numerical path): two paths give every
    text other last bits, one path always the same vector, whatever the batch."""

    def __init__(self, path: str = "AVX512", identity: str = "team-fake@sha256:0001", dimension: int = 8) -> None:
        self.path = path
        self.identity = identity
        self.dimension = dimension
        self.encoded: list[str] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.encoded.extend(texts)
        nudge = np.float32(1e-4 if self.path == "AVX2" else 0.0)
        rows = []
        for text in texts:
            raw = np.frombuffer(hashlib.sha256((self.identity + text).encode("utf-8")).digest(), dtype=np.uint8)
            v = raw[: self.dimension].astype(np.float32) - np.float32(127.5) + nudge
            rows.append(v / np.linalg.norm(v))
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dimension)

    def describe(self) -> dict[str, object]:
        return {"identity": self.identity, "spec": "anywhere", "dimension": self.dimension, "normalised": True,
                "encoder": f"one token length per forward pass, min(128, ceil(4096 / length)) rows; "
                           f"torch 2.15.0, cpu {self.path}"}


def _texts(n: int, tag: str = "") -> list[str]:
    return [f"meeting {tag}{i} | 2024-03-{1 + i % 28:02d} | participants: a, b" for i in range(n)]


def _tier(path: Path) -> SharedTier:
    return SharedTier(LocalFolderStore(path))


def _entries(tier_root: Path) -> list[Path]:
    return sorted(p for p in tier_root.rglob("*.shard") if "corrupt" not in p.parts)


def test_contract_is_the_model_key_without_the_numerical_path() -> None:
    a, b = model_key(PathEmbedder("AVX512")), model_key(PathEmbedder("AVX2"))
    assert a != b  # the machine's cache keeps the two paths apart
    assert contract_key(a) == contract_key(b)  # the team's shares them
    assert "cpu" not in contract_key(a)["encoder"] and "torch" not in contract_key(a)["encoder"]
    assert without_numerical_path("rule; torch 2.15.0+cu132, cpu AVX512; onnxruntime 1.2") == "rule; onnxruntime 1.2"
    other_model = contract_key(model_key(PathEmbedder(identity="another@sha256:0002")))
    assert other_model != contract_key(a)  # nothing is shared across models


def test_a_second_machine_encodes_nothing_and_gets_the_first_machines_bytes(tmp_path: Path) -> None:
    tier, texts = _tier(tmp_path / "team"), _texts(300)
    first = TeamCachingEmbedder(PathEmbedder("AVX512"), tmp_path / "m1", tier, piece=64)
    v1 = first.encode(texts)
    assert (first.encoded, first.from_shared, first.hits) == (300, 0, 0)
    assert len(_entries(tmp_path / "team")) == 5  # 300 texts in pieces of 64

    inner = PathEmbedder("AVX2")
    second = TeamCachingEmbedder(inner, tmp_path / "m2", _tier(tmp_path / "team"), piece=64)
    v2 = second.encode(texts)
    assert inner.encoded == [] and (second.encoded, second.from_shared, second.hits) == (0, 300, 0)
    assert v1.tobytes() == v2.tobytes()
    # the first machine's numerical path, as this process records it (None unless torch is loaded here)
    assert second.provenance()["encoded_by"] == [{"numerical_path": numerical_path(), "texts": 300}]

    again = TeamCachingEmbedder(PathEmbedder("AVX2"), tmp_path / "m2", _tier(tmp_path / "team"), piece=64)
    assert again.encode(texts).tobytes() == v1.tobytes() and (again.hits, again.from_shared) == (300, 0)

    alone = CachingEmbedder(PathEmbedder("AVX2"), tmp_path / "m3", piece=64)  # no tier: this machine's bits
    assert alone.encode(texts).tobytes() != v1.tobytes()


def test_only_the_missing_texts_are_encoded_and_published(tmp_path: Path) -> None:
    tier = _tier(tmp_path / "team")
    TeamCachingEmbedder(PathEmbedder("AVX512"), tmp_path / "m1", tier, piece=50).encode(_texts(100))
    inner = PathEmbedder("AVX2")
    second = TeamCachingEmbedder(inner, tmp_path / "m2", tier, piece=50)
    second.encode(_texts(100) + _texts(30, "new"))
    assert sorted(inner.encoded) == sorted(_texts(30, "new"))
    assert (second.from_shared, second.encoded) == (100, 30)
    assert len(_entries(tmp_path / "team")) == 3


def _corrupt(entry: Path) -> None:
    data = bytearray(entry.read_bytes())
    data[-5] ^= 0xFF  # one bit of the last vector
    entry.write_bytes(bytes(data))


def _truncate(entry: Path) -> None:
    entry.write_bytes(entry.read_bytes()[:-100])


@pytest.mark.parametrize("damage", [_corrupt, _truncate], ids=["corrupted", "truncated"])
def test_a_bad_entry_is_refused_by_name_set_aside_and_re_encoded(tmp_path: Path, damage: object) -> None:
    texts = _texts(120)
    good = TeamCachingEmbedder(PathEmbedder("AVX512"), tmp_path / "m1", _tier(tmp_path / "team"), piece=60)
    expected = good.encode(texts)
    bad = _entries(tmp_path / "team")[0]
    damage(bad)  # type: ignore[operator]
    warnings: list[str] = []
    inner = PathEmbedder("AVX512")  # the same numerical path: the re-encoded vectors are the same bytes
    second = TeamCachingEmbedder(inner, tmp_path / "m2", _tier(tmp_path / "team"), piece=60,
                             warn=warnings.append)
    assert second.encode(texts).tobytes() == expected.tobytes()
    assert len(inner.encoded) == 60 and second.from_shared == 60
    assert len(warnings) == 1 and bad.stem in warnings[0] and "refused" in warnings[0]
    assert (tmp_path / "team" / "corrupt" / bad.parent.name / bad.name).is_file()
    # the replacement is a valid entry again: a third machine reads everything
    third = TeamCachingEmbedder(PathEmbedder("AVX2"), tmp_path / "m3", _tier(tmp_path / "team"), piece=60)
    assert third.encode(texts).tobytes() == expected.tobytes() and third.encoded == 0


def test_unpack_checks_everything_before_a_vector_is_used() -> None:
    contract, dim = {"identity": "x", "dimension": 4}, 4
    keys = hashlib.sha256(b"a").digest() + hashlib.sha256(b"b").digest()
    vectors = np.asarray([[1, 0, 0, 0], [0, 1, 0, 0]], dtype="<f4").tobytes()
    name, blob = pack(contract, keys, vectors, dim, {"cpu_capability": "AVX2"})
    assert unpack(name, blob, contract, dim).record["encoded_by"] == {"cpu_capability": "AVX2"}
    nan = np.asarray([[np.nan, 0, 0, 0], [0, 1, 0, 0]], dtype="<f4").tobytes()
    forged_name, forged = pack(contract, keys, nan, dim, None)
    cases = {
        "magic": (name, b"x" + blob),
        "truncated": (name, blob[:-1]),
        "another contract": (name, blob),
        "name": ("0" * 32, blob),
        "not a finite unit vector": (forged_name, forged),
    }
    for why, (entry, data) in cases.items():
        with pytest.raises(BadEntry):
            unpack(entry, data, {"identity": "y", "dimension": 4} if why == "another contract" else contract, dim)


def _fill(root: str, tier: str, out: str) -> None:
    embedder = TeamCachingEmbedder(PathEmbedder("AVX512"), Path(root), _tier(Path(tier)), piece=40)
    Path(out).write_bytes(embedder.encode(_texts(400)).tobytes())


def test_two_builds_filling_one_empty_tier_at_once_agree(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_fill, args=(str(tmp_path / f"m{i}"), str(tmp_path / "team"), str(tmp_path / f"v{i}")))
             for i in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert (tmp_path / "v1").read_bytes() == (tmp_path / "v2").read_bytes()
    contract = contract_key(model_key(PathEmbedder()))
    for entry in _entries(tmp_path / "team"):
        unpack(entry.stem, entry.read_bytes(), contract, 8)  # every entry whole and valid
    assert len(_entries(tmp_path / "team")) == 10
    assert not [p for p in (tmp_path / "team").rglob("*") if p.name.startswith(".ragsweep-tmp")]


def test_an_unreachable_tier_costs_one_line_and_changes_no_number(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("boto3")
    monkeypatch.setattr("harness.index.teamtier.REACH_DEADLINE_S", 0.5)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    tier = SharedTier.from_spec("s3://team/vectors", "http://127.0.0.1:9")  # nothing listens on port 9
    assert tier is not None
    warnings: list[str] = []
    embedder = TeamCachingEmbedder(PathEmbedder("AVX2"), tmp_path / "m", tier, piece=50, warn=warnings.append)
    vectors = embedder.encode(_texts(60))
    alone = CachingEmbedder(PathEmbedder("AVX2"), tmp_path / "other", piece=50).encode(_texts(60))
    assert vectors.tobytes() == alone.tobytes()
    assert len(warnings) == 1 and "team embedding cache s3://team/vectors" in warnings[0]
    assert embedder.provenance()["team_cache_unreachable"] and embedder.encoded == 60


def test_the_spec_is_checked(tmp_path: Path) -> None:
    from harness.errors import UsageError

    assert SharedTier.from_spec(None) is None and SharedTier.from_spec("off") is None
    with pytest.raises(UsageError, match="RAGSWEEP_TEAM_CACHE"):
        SharedTier.from_spec("s3://")
    with pytest.raises(UsageError, match="RAGSWEEP_TEAM_CACHE"):
        SharedTier.from_spec("gs://bucket")
    assert isinstance(SharedTier.from_spec(str(tmp_path)), SharedTier)


def test_a_model_folder_written_for_another_contract_is_refused(tmp_path: Path) -> None:
    tier = _tier(tmp_path / "team")
    embedder = TeamCachingEmbedder(PathEmbedder(), tmp_path / "m", tier)
    (tmp_path / "team" / embedder.folder.name).mkdir(parents=True)
    (tmp_path / "team" / embedder.folder.name / "model.json").write_text("{}\n")
    with pytest.raises(StorageError, match="another contract"):
        tier.ensure_model(embedder.folder.name, embedder.key)


def _build(out: Path, root: Path, path: str, tier: Path | None) -> tuple[str, dict[str, object]]:
    corpus = read_corpus("qmsum", FIXTURE, FIXTURE / "SOURCES.tsv")
    build_state(out, [corpus], {"header": PathEmbedder(path)}, embedding_cache=root,  # type: ignore[dict-item]
                team_cache=(str(tier), None) if tier else (None, None))
    build = json.loads((out / "build.json").read_text())
    return verified_identity(out), build


def test_states_built_on_two_numerical_paths_share_an_identity_through_the_tier(tmp_path: Path) -> None:
    first, build1 = _build(tmp_path / "s1", tmp_path / "m1", "AVX512", tmp_path / "team")
    second, build2 = _build(tmp_path / "s2", tmp_path / "m2", "AVX2", tmp_path / "team")
    alone, build3 = _build(tmp_path / "s3", tmp_path / "m3", "AVX2", None)
    assert first == second != alone
    v1, v2, v3 = (b["vectors"][0] for b in (build1, build2, build3))  # type: ignore[index]
    assert v1["encoded"] > 0 and v1["from_team"] == 0 and v1["team_cache"] == f"folder {tmp_path / 'team'}"
    assert v2["encoded"] == 0 and v2["from_team"] == v1["encoded"]
    assert v3["team_cache"] is None and v3["encoded"] == v1["encoded"]
    assert os.path.basename(str(v2["machine_cache"])).startswith("team-fake")


@pytest.fixture
def stack_tier() -> SharedTier:
    """A fresh prefix in the local stack's bucket (make stack-up); skip saying why when it is not up, fail
    under RAGSWEEP_REQUIRE_STACK=1 (make test)."""
    endpoint = os.environ.get("RAGSWEEP_S3_ENDPOINT")
    if not endpoint:
        reason = "the local stack is not up (RAGSWEEP_S3_ENDPOINT unset; make stack-up)"
        if os.environ.get("RAGSWEEP_REQUIRE_STACK") == "1":
            pytest.fail(f"{reason} (RAGSWEEP_REQUIRE_STACK=1)")
        pytest.skip(reason)
    bucket = os.environ.get("RAGSWEEP_S3_BUCKET", "ragsweep")
    tier = SharedTier.from_spec(f"s3://{bucket}/team-test-{os.urandom(4).hex()}", endpoint)
    assert tier is not None
    return tier


@pytest.mark.integration
def test_the_tier_on_the_stacks_s3_server(stack_tier: SharedTier, tmp_path: Path) -> None:
    assert stack_tier.store.put_new("probe", b"first") and not stack_tier.store.put_new("probe", b"second")
    assert stack_tier.store.get_bytes("probe") == b"first"  # a conditional PUT: the first writer's object
    texts = _texts(150)
    v1 = TeamCachingEmbedder(PathEmbedder("AVX512"), tmp_path / "m1", stack_tier, piece=50).encode(texts)
    folder = TeamCachingEmbedder(PathEmbedder(), tmp_path / "probe", stack_tier).folder.name
    names = stack_tier.names(folder)
    assert len(names) == 3
    entry = f"{folder}/{names[1]}.shard"
    stack_tier.store.put_bytes(entry, stack_tier.store.get_bytes(entry)[:-10])  # truncated in the bucket
    warnings: list[str] = []
    inner = PathEmbedder("AVX512")
    second = TeamCachingEmbedder(inner, tmp_path / "m2", stack_tier, piece=50, warn=warnings.append)
    assert second.encode(texts).tobytes() == v1.tobytes()
    assert len(inner.encoded) == 50 and second.from_shared == 100
    assert len(warnings) == 1 and names[1] in warnings[0]
    assert stack_tier.store.exists(f"corrupt/{entry}")
    third_inner = PathEmbedder("AVX2")
    third = TeamCachingEmbedder(third_inner, tmp_path / "m3", stack_tier, piece=50)
    assert third.encode(texts).tobytes() == v1.tobytes() and third_inner.encoded == []


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSWEEP_TEAM")}
    return subprocess.run([sys.executable, "-m", "harness", *argv], capture_output=True, text=True, env=env,
                          timeout=120, cwd=Path(__file__).parent.parent)


def test_cache_stats_and_verify(tmp_path: Path) -> None:
    _build(tmp_path / "s1", tmp_path / "m1", "AVX512", tmp_path / "team")
    _build(tmp_path / "s2", tmp_path / "m2", "AVX2", tmp_path / "team")
    stats = _cli("cache", "stats", "--team-cache", str(tmp_path / "team"), "--state", str(tmp_path / "s2"), "--json")
    assert stats.returncode == 0, stats.stderr
    report = json.loads(stats.stdout)
    (folder,) = report["folders"]
    (state,) = report["states"]
    assert folder["model"] == "team-fake@sha256:0001" and folder["texts"] == state["from_team"] > 0
    assert state["team_hit_rate"] == 1.0 and state["encoded"] == 0
    ok = _cli("cache", "verify", "--team-cache", str(tmp_path / "team"))
    assert ok.returncode == 0 and f"verified {folder['entries']} entries: 0 bad" in ok.stdout
    bad = _entries(tmp_path / "team")[0]
    _corrupt(bad)
    refused = _cli("cache", "verify", "--team-cache", str(tmp_path / "team"), "--set-aside")
    assert refused.returncode == 5
    (line,) = refused.stderr.strip().splitlines()
    assert bad.stem in line and "moved to corrupt/" in line
    assert not bad.exists() and _cli("cache", "verify", "--team-cache", str(tmp_path / "team")).returncode == 0
    none = _cli("cache", "stats")
    assert none.returncode == 2 and "no team cache named" in none.stderr


def test_an_arm_process_encodes_its_queries_through_the_team_cache(tmp_path: Path) -> None:
    from harness.sweep.runtask import Services, query_encoder

    model = PathEmbedder("AVX2")
    assert query_encoder(model, Services()) is model  # no team cache: the model itself, as before
    assert query_encoder(model, Services(team_cache=(str(tmp_path / "team"), None))) is model  # no machine cache
    first = query_encoder(PathEmbedder("AVX512"), Services(team_cache=(str(tmp_path / "team"), None),
                                                           embedding_cache=tmp_path / "m1"))
    second = query_encoder(model, Services(team_cache=(str(tmp_path / "team"), None), embedding_cache=tmp_path / "m2"))
    assert isinstance(second, TeamCachingEmbedder) and second.inner is model
    queries = ["what did the committee decide on 12 March 2024?", "who chaired the budget meeting?"]
    assert first.encode(queries).tobytes() == second.encode(queries).tobytes() and model.encoded == []
