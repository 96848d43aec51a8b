"""Artefact stores: atomic puts, the completeness marker, retries; S3 against a real server.

The S3 tests use the project's stack (S3Proxy, started by `make stack-up`, settings in
RAGSWEEP_S3_ENDPOINT) or else start a real S3-compatible server on loopback (SeaweedFS ``weed``
or ``minio``, found through RAGSWEEP_S3_SERVER or on PATH), and skip saying so when there is none. There is
no mock S3 here: a test that passes against a fake proves the fake.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes import Clock

from harness.errors import EXIT_REFUSED, RefusedError, UsageError
from harness.sweep.catalogue import Arm, config_hash
from harness.sweep.storage import (
    ARM_FILES,
    LocalFolderStore,
    MissingArtefactError,
    S3Store,
    StorageError,
    arm_key,
    incomplete_reason,
    is_complete,
    is_transient_s3_error,
    publish_arm,
    publish_failure,
    read_complete_marker,
    read_failure,
    retry_transient,
)

ARM = Arm(name="pool-12", family="pool", axis="candidate_pool", config={"stage": "rerank", "candidate_pool": 12})
FILES = {name: f"{name} of pool-12\n" for name in ARM_FILES}


# --- the local folder ----------------------------------------------------------------------------

def test_local_put_get_list_exists(tmp_path: Path) -> None:
    store = LocalFolderStore(tmp_path)
    store.put_text("sweeps/s1/a.txt", "α\n")
    store.put_bytes("sweeps/s1/b/c.png", b"\x89PNG")
    assert store.get_text("sweeps/s1/a.txt") == "α\n"
    assert store.get_bytes("sweeps/s1/b/c.png") == b"\x89PNG"
    assert store.exists("sweeps/s1/a.txt") and not store.exists("sweeps/s1/zzz")
    assert store.list("sweeps/s1/") == ["sweeps/s1/a.txt", "sweeps/s1/b/c.png"]
    assert store.list("sweeps/s2/") == []
    with pytest.raises(MissingArtefactError, match="no artefact sweeps/s1/zzz"):
        store.get_text("sweeps/s1/zzz")
    store.put_text("sweeps/s1/a.txt", "replaced")
    assert store.get_text("sweeps/s1/a.txt") == "replaced"


@pytest.mark.parametrize("key", ["../x", "a//b", "/abs", "a/./b", "a b", "", "a\\b"])
def test_keys_are_checked(tmp_path: Path, key: str) -> None:
    with pytest.raises(UsageError, match="storage key"):
        LocalFolderStore(tmp_path).put_text(key, "x")


def test_a_failed_write_leaves_the_old_artefact_and_no_temporary(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalFolderStore(tmp_path)
    store.put_text("k/metrics.json", "old")

    def broken_replace(src: Any, dst: Any) -> None:
        raise OSError("disk went away")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk went away"):
        store.put_text("k/metrics.json", "new")
    monkeypatch.undo()
    assert store.get_text("k/metrics.json") == "old"
    assert sorted(p.name for p in (tmp_path / "k").iterdir()) == ["metrics.json"]


def test_a_reader_never_sees_half_an_artefact(tmp_path: Path) -> None:
    import threading

    store = LocalFolderStore(tmp_path)
    size = 1 << 20
    store.put_text("k/big.json", "A" * size)
    seen: set[tuple[int, frozenset[str]]] = set()
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            text = store.get_text("k/big.json")
            seen.add((len(text), frozenset(text)))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for i in range(30):
            store.put_text("k/big.json", ("B" if i % 2 == 0 else "A") * size)
    finally:
        stop.set()
        thread.join()
    assert seen <= {(size, frozenset("A")), (size, frozenset("B"))}


def test_temporary_files_are_never_listed(tmp_path: Path) -> None:
    store = LocalFolderStore(tmp_path)
    store.put_text("k/a.json", "{}")
    (tmp_path / "k" / ".ragsweep-tmp.half.tmp").write_text("half")
    assert store.list("k/") == ["k/a.json"]


@pytest.mark.parametrize("link", ["sweeps", "sweeps/s1", "sweeps/s1/fam/arm", "sweeps/s1/fam/arm/metrics.json"])
def test_a_link_inside_the_store_is_refused_for_every_operation(tmp_path: Path, link: str) -> None:
    """A folder or file below the store's root that is a symbolic link (to a folder or file outside the
    store) is refused in one line, exit 3, whether written, read, tested or deleted: never followed."""
    root, outside = tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    (outside / "metrics.json").write_text("outside\n")
    (root / link).parent.mkdir(parents=True)
    (root / link).symlink_to(outside / "metrics.json" if link.endswith(".json") else outside)
    store = LocalFolderStore(root)
    refusal = (f"^{root / link}: a symbolic link in the artefact store {root}; refused, not followed "
               r"\(remove it, or choose another --out\)$")
    for attempt in (lambda: store.put_text("sweeps/s1/fam/arm/metrics.json", "mine\n"),
                    lambda: store.get_text("sweeps/s1/fam/arm/metrics.json"),
                    lambda: store.exists("sweeps/s1/fam/arm/metrics.json"),
                    lambda: store.delete("sweeps/s1/fam/arm/metrics.json")):
        with pytest.raises(RefusedError, match=refusal) as caught:
            attempt()
        assert caught.value.exit_code == EXIT_REFUSED
    assert sorted(p.name for p in outside.rglob("*")) == ["metrics.json"]
    assert (outside / "metrics.json").read_text() == "outside\n"


def test_a_store_whose_root_is_a_link_is_used(tmp_path: Path) -> None:
    """--out itself may be a link (the user named it): only what is below it is checked."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "out").symlink_to(real)
    LocalFolderStore(tmp_path / "out").put_text("sweeps/s1/a.txt", "x")
    assert (real / "sweeps" / "s1" / "a.txt").read_text() == "x"


# --- the completeness marker ---------------------------------------------------------------------

class RecordingStore(LocalFolderStore):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.order: list[str] = []

    def put_bytes(self, key: str, data: bytes) -> None:
        self.order.append(key.rsplit("/", 1)[-1])
        super().put_bytes(key, data)


def test_publish_writes_the_marker_last_and_completes(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path)
    digest = config_hash(ARM, "state-A")
    assert not is_complete(store, "s1", ARM, digest)
    publish_arm(store, "s1", ARM, digest, FILES, state_identity="state-A")
    assert store.order == [*ARM_FILES, "complete.json"]
    assert is_complete(store, "s1", ARM, digest)
    assert store.exists("sweeps/s1/pool/pool-12/metrics.json")
    assert not is_complete(store, "s1", ARM, config_hash(ARM, "state-B"))
    assert "config or the corpus state changed" in str(incomplete_reason(store, "s1", ARM,
                                                                         config_hash(ARM, "state-B")))


def test_half_rewritten_set_reads_incomplete(tmp_path: Path) -> None:
    store = LocalFolderStore(tmp_path)
    digest = config_hash(ARM, "s")
    publish_arm(store, "s1", ARM, digest, FILES)
    # A re-run rewrote one file and died before its marker: old marker, mixed files.
    store.put_text(arm_key("s1", ARM, "per_query.json"), "from the re-run\n")
    assert incomplete_reason(store, "s1", ARM, digest) == \
        "per_query.json does not match the sha256 in complete.json (a re-run stopped half way)"
    (tmp_path / "sweeps/s1/pool/pool-12/runinfo.json").unlink()
    store.put_text(arm_key("s1", ARM, "per_query.json"), FILES["per_query.json"])
    assert incomplete_reason(store, "s1", ARM, digest) == "runinfo.json is missing"


def test_publish_refuses_a_partial_set(tmp_path: Path) -> None:
    store = LocalFolderStore(tmp_path)
    with pytest.raises(UsageError, match=r"missing runinfo\.json"):
        publish_arm(store, "s1", ARM, "h", {k: v for k, v in FILES.items() if k != "runinfo.json"})
    assert store.list() == []


def test_failure_marker(tmp_path: Path) -> None:
    store = LocalFolderStore(tmp_path)
    assert read_failure(store, "s1", ARM) is None
    publish_failure(store, "s1", ARM, "h", "exit 3: mixed vector space")
    failure = read_failure(store, "s1", ARM)
    assert failure is not None and failure["error"] == "exit 3: mixed vector space"
    assert not is_complete(store, "s1", ARM, "h")


def test_sweep_id_is_one_segment(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        publish_arm(LocalFolderStore(tmp_path), "a/b", ARM, "h", FILES)


# --- retries -------------------------------------------------------------------------------------

class Transient(Exception):
    pass


def test_retry_backs_off_exponentially_with_a_cap() -> None:
    clock = Clock()
    calls: Iterator[Exception | str] = iter([Transient(), Transient(), Transient(), Transient(), Transient(), "ok"])

    def call() -> str:
        item = next(calls)
        if isinstance(item, Exception):
            raise item
        return item

    result = retry_transient(call, is_transient=lambda e: isinstance(e, Transient), what="put k",
                             base_s=1.0, cap_s=5.0, deadline_s=100.0, sleep=clock.sleep, clock=clock,
                             jitter=lambda: 1.0)
    assert result == "ok"
    assert clock.sleeps == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_retry_stops_at_the_deadline() -> None:
    clock = Clock()

    def call() -> None:
        raise Transient("503 slow down")

    with pytest.raises(StorageError, match=r"put k: still failing after 4 attempts .* Transient: 503 slow down"):
        retry_transient(call, is_transient=lambda e: isinstance(e, Transient), what="put k", base_s=1.0,
                        cap_s=100.0, deadline_s=10.0, sleep=clock.sleep, clock=clock, jitter=lambda: 1.0)
    assert clock.sleeps == [1.0, 2.0, 4.0]  # the fourth delay (8 s) would end past 10 s


def test_retry_raises_a_permanent_error_at_once() -> None:
    clock = Clock()

    def call() -> None:
        raise PermissionError("403")

    with pytest.raises(PermissionError):
        retry_transient(call, is_transient=lambda e: isinstance(e, Transient), what="x", sleep=clock.sleep,
                        clock=clock)
    assert clock.sleeps == []


def _client_error(code: str, status: int) -> Exception:
    from botocore.exceptions import ClientError

    return ClientError({"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}},
                       "PutObject")


def test_transient_classification() -> None:
    from botocore.exceptions import EndpointConnectionError, ReadTimeoutError

    assert is_transient_s3_error(_client_error("SlowDown", 503))
    assert is_transient_s3_error(_client_error("Throttling", 400))
    assert is_transient_s3_error(_client_error("InternalError", 500))
    assert is_transient_s3_error(_client_error("Whatever", 429))
    assert is_transient_s3_error(EndpointConnectionError(endpoint_url="http://127.0.0.1:1"))
    assert is_transient_s3_error(ReadTimeoutError(endpoint_url="http://127.0.0.1:1"))
    assert not is_transient_s3_error(_client_error("AccessDenied", 403))
    assert not is_transient_s3_error(_client_error("NoSuchKey", 404))
    assert not is_transient_s3_error(ValueError("bug"))


def _free_ports(n: int) -> list[int]:
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@pytest.mark.integration
def test_unreachable_endpoint_is_retried_with_real_sleeps_until_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("boto3")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ragsweep-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "ragsweep-test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    (port,) = _free_ports(1)  # nothing listens there: a real connection refusal
    store = S3Store("b", f"http://127.0.0.1:{port}", deadline_s=1.5)
    started = time.monotonic()
    with pytest.raises(StorageError, match=r"put k: still failing after \d+ attempts"):
        store.put_text("k", "x")
    assert 0.5 < time.monotonic() - started < 10


# --- S3 against a real server --------------------------------------------------------------------

def _server_binary() -> tuple[str, str] | None:
    explicit = os.environ.get("RAGSWEEP_S3_SERVER")
    if explicit:
        if not (Path(explicit).is_file() and os.access(explicit, os.X_OK)):
            pytest.fail(f"RAGSWEEP_S3_SERVER={explicit} is not an executable file")
        return ("minio" if "minio" in Path(explicit).name else "weed"), explicit
    for kind in ("weed", "minio"):
        found = shutil.which(kind)
        if found:
            return kind, found
    return None


@pytest.fixture(scope="module")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("boto3")
    if os.environ.get("RAGSWEEP_S3_ENDPOINT"):  # the project's stack (make stack-up): S3Proxy on loopback
        yield os.environ["RAGSWEEP_S3_ENDPOINT"]
        return
    binary = _server_binary()
    if binary is None:
        pytest.skip("no S3-compatible server binary: set RAGSWEEP_S3_SERVER to a SeaweedFS `weed` or `minio` "
                    "binary, or put one on PATH (tests of S3Store need a real server; no mock S3 is used)")
    kind, path = binary
    data = tmp_path_factory.mktemp("s3data")
    env = {**os.environ, "MINIO_ROOT_USER": "ragsweep-test", "MINIO_ROOT_PASSWORD": "ragsweep-test-secret"}
    if kind == "minio":
        (port,) = _free_ports(1)
        argv = [path, "server", str(data), "--address", f"127.0.0.1:{port}", "--console-address",
                f"127.0.0.1:{_free_ports(1)[0]}"]
    else:
        master, master_g, volume, volume_g, filer, filer_g, port, s3_g = _free_ports(8)
        argv = [path, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data}",
                f"-master.port={master}", f"-master.port.grpc={master_g}", f"-volume.port={volume}",
                f"-volume.port.grpc={volume_g}", "-filer", f"-filer.port={filer}", f"-filer.port.grpc={filer_g}",
                "-s3", f"-s3.port={port}", f"-s3.port.grpc={s3_g}", "-s3.port.iceberg=0", "-s3.port.lance=0",
                "-master.volumeSizeLimitMB=64", "-volume.max=4"]
    log = (data / "server.log").open("wb")
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=data)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.fixture
def s3_store(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> S3Store:
    if not os.environ.get("RAGSWEEP_S3_ENDPOINT"):  # our own server: its credentials
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ragsweep-test")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "ragsweep-test-secret")
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    # A fresh prefix per run: the stack's server keeps its data between `make test` runs.
    name = request.node.name[:40].replace("[", "-").rstrip("]")
    store = S3Store("ragsweep-test", s3_endpoint, prefix=f"t-{name}-{uuid.uuid4().hex[:8]}")
    deadline = time.monotonic() + 60
    while True:  # the server takes a moment to accept its first bucket
        try:
            store._client.create_bucket(Bucket="ragsweep-test")
            break
        except Exception as e:
            if getattr(e, "response", {}).get("Error", {}).get("Code") in ("BucketAlreadyOwnedByYou",
                                                                          "BucketAlreadyExists"):
                break
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    return store


@pytest.mark.integration
def test_s3_round_trip(s3_store: S3Store) -> None:
    s3_store.put_text("sweeps/s1/a.txt", "α\n")
    s3_store.put_bytes("sweeps/s1/b/c.png", b"\x89PNG")
    assert s3_store.get_text("sweeps/s1/a.txt") == "α\n"
    assert s3_store.get_bytes("sweeps/s1/b/c.png") == b"\x89PNG"
    assert s3_store.exists("sweeps/s1/a.txt")
    assert not s3_store.exists("sweeps/s1/nope")
    assert s3_store.list("sweeps/s1/") == ["sweeps/s1/a.txt", "sweeps/s1/b/c.png"]
    with pytest.raises(MissingArtefactError):
        s3_store.get_text("sweeps/s1/nope")


@pytest.mark.integration
def test_s3_an_object_larger_than_one_put_goes_up_in_parts_and_comes_back_whole(s3_store: S3Store) -> None:
    """A two-corpus state's archive is over S3Proxy's 32 MiB limit for one v4-signed PUT (MaxMessageLengthExceeded,
    found on the single-node cluster): above MULTIPART_BYTES it is a multipart upload, the same bytes back."""
    from harness.objectstore import MULTIPART_BYTES

    data = os.urandom(2 * MULTIPART_BYTES + 12345)  # three parts, the last short
    s3_store.put_bytes("big/state.tar.gz", data)
    assert s3_store.get_bytes("big/state.tar.gz") == data
    assert s3_store.list("big/") == ["big/state.tar.gz"]
    uploads = s3_store._client.list_multipart_uploads(Bucket=s3_store.bucket).get("Uploads", [])
    assert not [u for u in uploads if u["Key"].startswith(s3_store.prefix)]  # none left half-done


def test_s3_publish_and_complete(s3_store: S3Store) -> None:
    digest = config_hash(ARM, "state-A")
    assert not is_complete(s3_store, "s1", ARM, digest)
    publish_arm(s3_store, "s1", ARM, digest, FILES, state_identity="state-A")
    assert is_complete(s3_store, "s1", ARM, digest)
    assert s3_store.list("sweeps/s1/pool/pool-12/") == sorted(
        f"sweeps/s1/pool/pool-12/{name}" for name in (*ARM_FILES, "complete.json"))


@pytest.mark.integration
def test_s3_list_paginates(s3_store: S3Store) -> None:
    keys = [f"many/k{i:04d}" for i in range(1005)]  # more than one 1000-key page
    for key in keys:
        s3_store.put_text(key, "x")
    assert s3_store.list("many/") == keys


@pytest.mark.integration
def test_s3_missing_bucket_is_not_retried(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if not os.environ.get("RAGSWEEP_S3_ENDPOINT"):  # our own server: its credentials
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ragsweep-test")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "ragsweep-test-secret")
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    slept: list[float] = []
    store = S3Store("no-such-bucket-here", s3_endpoint, sleep=slept.append)
    with pytest.raises(StorageError, match="NoSuchBucket"):  # a wrong bucket is not a missing artefact
        store.get_text("x")
    assert slept == []


def test_extra_files_are_published_recorded_and_checked(tmp_path: Path) -> None:
    store = LocalFolderStore(tmp_path)
    digest = config_hash(ARM, "state-A")
    publish_arm(store, "s1", ARM, digest, {**FILES, "run.trec": "q 0 d 1 1.0 x\n"}, state_identity="state-A")
    assert is_complete(store, "s1", ARM, digest)
    marker = read_complete_marker(store, "s1", ARM)
    assert marker is not None and set(marker["files"]) == {*ARM_FILES, "run.trec"}
    store.put_text("sweeps/s1/pool/pool-12/run.trec", "tampered\n")
    assert not is_complete(store, "s1", ARM, digest)
    with pytest.raises(UsageError, match=r"unexpected notes\.txt"):
        publish_arm(store, "s1", ARM, digest, {**FILES, "notes.txt": "x"})


@pytest.mark.integration
def test_ingest_shards_round_trip_through_s3_and_clear_leaves_nothing(s3_store: S3Store) -> None:
    """The Celery workers' shards on Kubernetes: written to, listed, read from and deleted in a bucket."""
    import numpy as np

    from harness.index.chunking import ChunkingPolicy
    from harness.index.documents import meeting_documents
    from harness.index.ingest.sinks import ShardSink
    from tests.test_ingest_eager import meeting as make_meeting

    meeting = make_meeting("s3-shard-1", [("A", 0.0, 2.0, "alpha beta gamma"), ("B", 2.0, 4.0, "delta epsilon")])
    docs = meeting_documents(meeting, ChunkingPolicy())
    sink = ShardSink(s3_store)
    vectors = np.arange(len(docs) * 3, dtype=np.float32).reshape(len(docs), 3)
    digest = sink.write_file(meeting.file_uuid, docs, {"header": vectors}, {"embedding": {"header": "m@1"}})
    assert sink.files() == {meeting.file_uuid}
    read_docs, read_vectors, meta = sink.read(meeting.file_uuid)
    assert read_docs == docs and read_vectors["header"].tolist() == vectors.tolist() and meta["sha256"] == digest
    sink.clear()
    assert sink.files() == set() and s3_store.list() == []
