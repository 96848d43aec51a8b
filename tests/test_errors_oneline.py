"""Every failure a user can cause is one line with its documented exit code (issue 34, parts 4 and 2).

An output that cannot be written (read-only, unwritable, full, a file in the way) is refused
before any work, or said in one line when a write fails midway (exit 9, harness.outputfiles);
a bad ``--s3-endpoint`` or ``RAGSWEEP_*`` value is a usage error naming it (exit 2); a
PostgreSQL password never reaches a message, in any DSN form; a command replaces only an
output of its own kind.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import EXIT_STORAGE, EXIT_USAGE, HarnessError, UsageError, mask_secrets, one_line

REPO = Path(__file__).resolve().parent.parent
QMSUM = REPO / "tests" / "fixtures" / "qmsum"


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert err.startswith("ragsweep: error: "), err
    return err.strip()


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


@pytest.fixture
def unwritable(tmp_path: Path) -> Iterator[Path]:
    """A folder this process cannot write into: one made read-only when not root; as root, who ignores
    permissions, /sys, where the kernel refuses even root a new file."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    try:
        fd, probe = tempfile.mkstemp(dir="/sys")
    except OSError:
        yield Path("/sys")
        return
    os.close(fd)
    os.unlink(probe)
    pytest.skip("running as root and /sys takes new files: no folder here refuses a write")


# --- an output that cannot be written: refused before any work -------------------------------------------

# Each reads something that does not exist after its output check: refused first, it never gets there
# (today: the state, corpus or source would be read first, or the work done, then an internal error).
UNWRITABLE = {
    "sweep run": (["sweep", "run", "--state", "{tmp}/no-state", "--out", "{out}"], "--out"),
    "sweep run --rerank-cache": (["sweep", "run", "--state", "{tmp}/no-state", "--arms", "pool", "--rerank-cache",
                                  "{out}", "--out", "{tmp}/o"], "--rerank-cache"),
    "sweep collect": (["sweep", "collect", "--sweep-id", "x", "--out", "{out}"], "--out"),
    "bench": (["bench", "--state", "{tmp}/no-state", "--control-name", "c", "--out", "{out}"], "--out"),
    "state build": (["state", "build", "--corpus", "synthetic={tmp}/no-corpus", "--out", "{out}"], "--out"),
    "state build --embedding-cache": (["state", "build", "--corpus", f"qmsum={QMSUM}", "--manifest",
                                       f"qmsum={QMSUM / 'SOURCES.tsv'}", "--out", "{tmp}/state",
                                       "--embedding-cache", "{out}"], "--embedding-cache"),
    "state build --shards": (["state", "build", "--corpus", f"qmsum={QMSUM}", "--manifest",
                              f"qmsum={QMSUM / 'SOURCES.tsv'}", "--dispatch", "eager", "--shards", "{out}",
                              "--out", "{tmp}/state"], "--shards"),
    "synth generate": (["synth", "generate", "--meetings", "20", "--out", "{out}"], "--out"),
    "synth select": (["synth", "select", "--from", "{tmp}/no-corpus", "--out", "{out}"], "--out"),
    "corpus fetch": (["corpus", "fetch", "qmsum", "--dest", "{out}", "--mirror", str(QMSUM), "--manifest",
                      str(QMSUM / "SOURCES.tsv")], "--dest"),
    "report reproduction": (["report", "reproduction", "--sweeps", "{tmp}/none", "--out", "{out}.md"], "--out"),
    "reranker train": (["reranker", "train", "--out", "{out}"], "--out"),
}


@pytest.mark.parametrize(("argv", "flag"), UNWRITABLE.values(), ids=UNWRITABLE.keys())
def test_an_unwritable_output_is_refused_before_any_work(argv: list[str], flag: str, unwritable: Path,
                                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = unwritable / f"ragsweep-test-{os.getpid()}"
    args = [a.format(tmp=tmp_path, out=out) for a in argv]
    target = args[args.index(flag) + 1]
    assert main(args) == EXIT_STORAGE
    err = _one_line(capsys)
    assert err.startswith(f"ragsweep: error: {flag} {target}: cannot write ("), err
    assert err.endswith("you can write to"), err
    assert not Path(target).exists()
    assert _tree(tmp_path) == ([] if os.geteuid() == 0 else ["read-only"])


FILE_IN_THE_WAY = {
    "sweep run": ["sweep", "run", "--state", "{tmp}/no-state", "--out", "{file}/out"],
    "bench": ["bench", "--state", "{tmp}/no-state", "--control-name", "c", "--out", "{file}/out"],
    "synth generate": ["synth", "generate", "--meetings", "20", "--out", "{file}/out"],
    "corpus fetch": ["corpus", "fetch", "qmsum", "--dest", "{file}/out", "--mirror", str(QMSUM), "--manifest",
                     str(QMSUM / "SOURCES.tsv")],
}


@pytest.mark.parametrize("argv", FILE_IN_THE_WAY.values(), ids=FILE_IN_THE_WAY.keys())
def test_a_file_where_the_output_needs_a_folder(argv: list[str], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "a-file"
    file.write_text("mine\n")
    args = [a.format(tmp=tmp_path, file=file) for a in argv]
    assert main(args) == EXIT_USAGE
    flag = "--dest" if "--dest" in args else "--out"
    assert _one_line(capsys) == (f"ragsweep: error: {flag} {file}/out: {file} is a file, not a folder; "
                                 f"choose another {flag}")
    assert _tree(tmp_path) == ["a-file"] and file.read_text() == "mine\n"


# --- a full disk ---------------------------------------------------------------------------------------------

@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 200 KiB tmpfs: a real full disk. Needs mount rights (root, outside most containers' limits)."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({(done.stderr or done.stdout).strip()}): the full-disk case is "
                    "covered by the file-size limit tests below")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_disk_that_fills_while_a_corpus_is_written(small_tmpfs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The probe passes (the disk is empty), the corpus (1.6 MB) does not fit: one line, nothing left."""
    out = small_tmpfs / "synthetic"
    assert main(["synth", "generate", "--seed", "3", "--meetings", "20", "--out", str(out)]) == EXIT_STORAGE
    assert _one_line(capsys) == (f"ragsweep: error: --out {out}: cannot write (No space left on device); "
                                 "free some space, or choose another --out")
    assert _tree(small_tmpfs) == []


_BUILD = """
import sys
from pathlib import Path
import numpy as np
from harness.commands.corpus import read_corpus
from harness.errors import StorageError
from harness.outputfiles import writing
from harness.state.build import build_state

class Fake:
    identity, dimension = "fake@sha256:0001", 1024
    def encode(self, texts):
        return np.full((len(texts), self.dimension), self.dimension ** -0.5, dtype=np.float32)
    def describe(self):
        return {"identity": self.identity, "spec": "fake", "dimension": self.dimension, "normalised": True}

corpus = read_corpus("qmsum", Path(sys.argv[2]), Path(sys.argv[2]) / "SOURCES.tsv")
try:
    with writing(Path(sys.argv[1]), "--out"):  # as ragsweep state build does
        build_state(Path(sys.argv[1]), [corpus], {"header": Fake()})
except StorageError as e:
    print(e)
"""


def test_a_disk_that_fills_while_a_state_writes_its_vectors(small_tmpfs: Path, tmp_path: Path) -> None:
    """The vectors file is memory-mapped: sparse, a full disk was a SIGBUS that killed the build with its
    STATE.partial/ left behind; its blocks reserved first, it is one line and nothing is left."""
    def build(out: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", _BUILD, str(out), str(QMSUM)], cwd=REPO, capture_output=True,
                              text=True)

    reference = tmp_path / "reference"
    assert build(reference).returncode == 0
    pages = {p.relative_to(reference).as_posix(): -(-p.stat().st_size // 4096) * 4096 for p in reference.rglob("*")
             if p.is_file()}
    vectors = pages["index/vectors-header.npy"]
    before = pages["store.sqlite"] + sum(n for name, n in pages.items() if name.startswith("corpora/"))
    subprocess.run(["mount", "-o", f"remount,size={before + 65536 + vectors // 2}", str(small_tmpfs)], check=True)
    out = small_tmpfs / "state"
    done = build(out)
    assert done.returncode == 0, f"killed by signal {-done.returncode}" if done.returncode < 0 else done.stderr
    assert done.stdout == f"--out {out}: cannot write (No space left on device); free some space, or choose " \
                          "another --out\n"
    assert _tree(small_tmpfs) == []


def _with_file_size_limit(limit: int, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run Python ``code`` with every file it writes capped at ``limit`` bytes: a write past it fails with
    EFBIG (File too large), as a write to a full disk fails with ENOSPC, on any machine and as root."""
    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the error, not the signal that would kill the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          preexec_fn=limited)


def test_a_write_past_the_space_left_is_one_line_from_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "synthetic"
    done = _with_file_size_limit(16_384, "import sys; from harness.cli import main; sys.exit(main(sys.argv[1:]))",
                                 "synth", "generate", "--seed", "3", "--meetings", "20", "--out", str(out))
    assert done.returncode == EXIT_STORAGE, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"ragsweep: error: --out {out}: cannot write (File too large")
    assert done.stderr.strip().endswith("free some space, or choose another --out")
    assert _tree(tmp_path) == []


WRITERS = {
    # bench's results (and report reproduction's page): a set of files, staged then renamed
    "write_files": ("from harness.report.files import write_files as w; w(out, {'metrics.json': 'x' * 100_000, "
                    "'metrics.md': 'y'})", "--out {out}: cannot write (File too large); "),
    # the sweep's arm artefacts and the ingest's shards
    "LocalFolderStore.put_text": ("from harness.objectstore import LocalFolderStore as S; "
                                  "S(out).put_text('sweeps/s/arm/metrics.json', 'x' * 100_000)",
                                  "{out}: cannot write (File too large); "),
}


@pytest.mark.parametrize(("code", "message"), WRITERS.values(), ids=WRITERS.keys())
def test_a_write_past_the_space_left_is_one_storage_error(code: str, message: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    program = (f"import sys\nfrom pathlib import Path\nfrom harness.errors import StorageError\nout = Path(sys.argv[1])"
               f"\ntry:\n    {code}\nexcept StorageError as e:\n    print(e)")
    done = _with_file_size_limit(16_384, program, str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(message.format(out=out)), done.stdout
    assert done.stdout.count("\n") == 1
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]  # no half-written file, no temporary one


@pytest.mark.parametrize(("failed", "blamed"), [
    ("out/metrics.json", True), ("out", True), (".", True),  # inside it, it, a folder above it
    ("out.partial/index/vectors.npy", True), (".out.tmp-x1/corpus.json", True),  # its temporary siblings
    ("cache/vectors.npy", False), ("outer/x", False),  # another output beside it: not blamed on it
])
def test_which_write_errors_an_output_is_blamed_for(failed: str, blamed: bool, tmp_path: Path) -> None:
    from harness.outputfiles import is_write_error

    error = OSError(30, "Read-only file system", str(tmp_path / failed))
    assert is_write_error(error, tmp_path / "out") is blamed
    assert is_write_error(OSError(28, "No space left on device"), tmp_path / "out")  # names no path: the output
    assert not is_write_error(OSError(111, "Connection refused"), tmp_path / "out")


# --- --s3-endpoint and RAGSWEEP_* values ----------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["sweep", "collect", "--sweep-id", "x", "--out", "s3://bucket/prefix", "--s3-endpoint", "notaurl"],
    ["sweep", "run", "--state", "{tmp}/no-state", "--out", "s3://bucket", "--s3-endpoint", "notaurl"],
], ids=["sweep collect", "sweep run"])
def test_an_s3_endpoint_that_is_not_a_url(argv: list[str], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main([a.format(tmp=tmp_path) for a in argv]) == EXIT_USAGE
    assert _one_line(capsys) == ("ragsweep: error: S3 endpoint 'notaurl' (--s3-endpoint or RAGSWEEP_S3_ENDPOINT): "
                                 "Invalid endpoint: notaurl; expected a URL such as http://127.0.0.1:9000")


def test_an_s3_endpoint_setting_that_is_not_a_url(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("RAGSWEEP_S3_ENDPOINT", "http//minio:9000")
    assert main(["sweep", "collect", "--sweep-id", "x", "--out", "s3://bucket"]) == EXIT_USAGE
    assert "S3 endpoint 'http//minio:9000' (--s3-endpoint or RAGSWEEP_S3_ENDPOINT)" in _one_line(capsys)


@pytest.mark.parametrize(("variable", "value", "problem"), [
    ("RAGSWEEP_SYNC_WAIT", "abc", "Input should be a valid number, unable to parse string as a number"),
    ("RAGSWEEP_EMBEDDING_BACKEND", "cloud", "Input should be 'torch' or 'onnx'"),
    ("RAGSWEEP_K8S_TIMEOUT", "soon", "Input should be a valid number, unable to parse string as a number"),
])
def test_a_bad_setting_is_one_line_naming_its_variable(variable: str, value: str, problem: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(variable, value)
    assert main(["sweep", "collect", "--sweep-id", "x", "--out", str(tmp_path / "out")]) == EXIT_USAGE
    assert _one_line(capsys) == (f"ragsweep: error: {variable}={value!r}: {problem}; "
                                 "set it to what is expected, or unset it")
    assert _tree(tmp_path) == []


# --- secrets -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "masked"), [
    ("host=db password=secret user=me", "host=db password=*** user=me"),
    ("host=db password='sec ret' user=me", "host=db password=*** user=me"),
    (r"host=db password = 'it\'s' dbname=x", "host=db password = *** dbname=x"),
    (r"password=pass\ word host=db", "password=*** host=db"),
    ("postgresql://me:secret@db:5432/x", "postgresql://me:***@db:5432/x"),
    ("postgresql://me:p@ss@db/x", "postgresql://me:***@db/x"),
    ("postgresql://me@db/x?sslmode=require&password=secret", "postgresql://me@db/x?sslmode=require&password=***"),
    ("PGPASSWORD=secret make stack-up", "PGPASSWORD=*** make stack-up"),
    ('{"password": "secret", "user": "me"}', '{"password": ***, "user": "me"}'),
    ("http://admin:secret@localhost:9200/_cluster/health", "http://admin:***@localhost:9200/_cluster/health"),
    # nothing to mask
    ('password authentication failed for user "me"', 'password authentication failed for user "me"'),
    ("http://localhost:9200/a@b", "http://localhost:9200/a@b"),
    ("secret: ragsweep-s3 not found", "secret: ragsweep-s3 not found"),
])
def test_mask_secrets(text: str, masked: str) -> None:
    assert mask_secrets(text) == masked


def test_one_line_joins_a_libraries_lines_and_masks() -> None:
    assert one_line("connection failed: refused\n\tIs the server running?\npassword=x") == (
        "connection failed: refused; Is the server running? password=***")


@pytest.mark.parametrize("dsn", [
    "host=127.0.0.1 port=1 user=me password=secret",
    "host=127.0.0.1 port=1 user=me password='se cret'",
    "postgresql://me:secret@127.0.0.1:1/db",
    "postgresql://me@127.0.0.1:1/db?password=secret",
])
def test_a_postgres_password_is_never_in_a_connection_error(dsn: str) -> None:
    pytest.importorskip("psycopg")
    from harness.store.postgres import PostgresStore

    with pytest.raises(UsageError) as caught:
        PostgresStore.open(dsn)
    message = one_line(str(caught.value))
    assert "cannot connect to PostgreSQL" in message and "***" in message
    assert "secret" not in message and "se cret" not in message and "\n" not in str(caught.value)


def test_an_unparsable_dsn_is_not_echoed() -> None:
    """libpq quotes where it stopped ('missing "=" after "cret"'): part of the password."""
    pytest.importorskip("psycopg")
    from harness.store.postgres import PostgresStore

    with pytest.raises(UsageError) as caught:
        PostgresStore.open("host=127.0.0.1 user=me password=se cret")
    assert "cret" not in str(caught.value) and "RAGSWEEP_PG_DSN is not a connection string" in str(caught.value)


def test_a_key_value_dsn_password_is_masked_by_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("psycopg")
    monkeypatch.setenv("RAGSWEEP_PG_DSN", "host=127.0.0.1 port=1 user=me password=secret")
    out = tmp_path / "state"
    assert main(["state", "build", "--corpus", f"qmsum={QMSUM}", "--manifest", f"qmsum={QMSUM / 'SOURCES.tsv'}",
                 "--store", "postgres", "--out", str(out)]) == EXIT_USAGE
    err = _one_line(capsys)
    assert "cannot connect to PostgreSQL" in err and err.endswith("It is host=127.0.0.1 port=1 user=me password=***")
    assert "secret" not in err
    assert _tree(tmp_path) == []


def test_an_s3_endpoints_password_is_masked_in_every_retry_warning(monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`--s3-endpoint http://user:PASSWORD@host` to a port where nothing listens: each retry warning, not only
    the final error, says ``user:***@`` (they printed the password, 12 of 12 over the default minute)."""
    import socket

    pytest.importorskip("boto3")
    from harness.objectstore import S3Store

    # credentials, so that the request is made and refused (transient), not refused at once for lack of them
    for name, value in (("AWS_ACCESS_KEY_ID", "k"), ("AWS_SECRET_ACCESS_KEY", "s"), ("AWS_DEFAULT_REGION", "x")):
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(S3Store, "DEADLINE_S", 1.0)  # a few retries, not a minute of them
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: a real connection refusal
    code = main(["sweep", "collect", "--out", "s3://b", "--s3-endpoint", f"http://user:s3cr3t@127.0.0.1:{port}",
                 "--sweep-id", "x"])
    lines = capsys.readouterr().err.splitlines()
    warnings = [line for line in lines if line.startswith("ragsweep: warning: ") and "attempt" in line]
    assert code == EXIT_STORAGE, lines
    assert len(warnings) >= 2, lines
    assert all(line.count("user:***@") == 2 for line in warnings), warnings  # the store's name and botocore's URL
    assert lines[-1].startswith("ragsweep: error: ") and "user:***@" in lines[-1]
    assert sum(line.count("s3cr3t") for line in lines) == 0, lines


# --- a command replaces only an output of its own kind --------------------------------------------------------

def test_bench_refuses_a_folder_that_is_not_a_results_folder(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "notes"
    out.mkdir()
    (out / "todo.txt").write_text("mine\n")
    assert main(["bench", "--state", str(tmp_path / "no-state"), "--control-name", "c", "--out", str(out)]) == 2
    assert _one_line(capsys) == (f"ragsweep: error: --out {out} is not a results folder (no metrics.json): bench "
                                 "replaces a results folder's files only; choose a new or empty folder")
    assert _tree(tmp_path) == ["notes", "notes/todo.txt"]


def test_reranker_train_force_replaces_a_reranker_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "notes"
    out.mkdir()
    (out / "todo.txt").write_text("mine\n")
    assert main(["reranker", "train", "--out", str(out), "--force"]) == EXIT_USAGE
    assert _one_line(capsys) == (f"ragsweep: error: --out {out} is not a reranker (no ragsweep-reranker.json): "
                                 "--force replaces a reranker only; choose another folder, or empty this one yourself")
    assert _tree(tmp_path) == ["notes", "notes/todo.txt"]


def test_report_reproduction_out_is_a_file_not_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "reproduction", "--sweeps", str(tmp_path / "none"), "--out", str(tmp_path)]) == 2
    assert _one_line(capsys) == (f"ragsweep: error: --out {tmp_path} is a folder; expected the page's file path "
                                 "(e.g. docs/reproduction.md)")
    assert _tree(tmp_path) == []


def test_report_reproduction_replaces_only_a_reproduction_page(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "README.md"
    page.write_text("# ragsweep\n\nhand-written\n")
    assert main(["report", "reproduction", "--sweeps", str(tmp_path / "none"), "--out", str(page)]) == 2
    assert _one_line(capsys) == (f"ragsweep: error: --out {page} is not a reproduction page (its first line is not "
                                 "\"# Reproduction: the methodology's tables, re-derived by ragsweep\"): the page "
                                 "replaces only itself; choose another path")
    assert page.read_text() == "# ragsweep\n\nhand-written\n"


def _baseline(folder: Path, commands: list[list[str]]) -> Path:
    folder.mkdir()
    (folder / "baseline.json").write_text(json.dumps({"status": "re-derivable", "why": "a test", "commands": commands,
                                                      "results": "{work}/out", "files": ["metrics.json"]}))
    return folder


def test_a_baseline_derivation_empties_only_its_own_scratch_folder(tmp_path: Path) -> None:
    from harness.sweep.baselines import WORK_MARKER, derive

    folder = _baseline(tmp_path / "b", [["true"]])
    work = tmp_path / "mine"
    work.mkdir()
    (work / "thesis.tex").write_text("years of work\n")
    with pytest.raises(UsageError, match=re.escape(f"--work: {work} is not a baseline's scratch folder")):
        derive(folder, work)
    assert (work / "thesis.tex").read_text() == "years of work\n"
    scratch = tmp_path / "scratch"
    assert derive(folder, scratch) == scratch / "out"
    (scratch / "left-over").write_text("from the last derivation\n")
    derive(folder, scratch)  # its own: emptied and marked again
    assert _tree(scratch) == [WORK_MARKER]


def test_a_baseline_command_that_fails_passes_its_exit_code_on(tmp_path: Path) -> None:
    from harness.sweep.baselines import derive

    folder = _baseline(tmp_path / "b", [[sys.executable, "-c", "import sys; print('full'); sys.exit(9)"]])
    with pytest.raises(HarnessError) as caught:
        derive(folder, tmp_path / "work")
    assert caught.value.exit_code == EXIT_STORAGE and str(caught.value).endswith("exited 9: full")


def test_an_arm_failure_is_recorded_on_one_line_with_secrets_masked(tmp_path: Path) -> None:
    """failed.json is read back into comparison.md: a library's multi-line message and a DSN's password
    must not reach it as they were raised."""
    from harness.objectstore import open_store
    from harness.sweep.catalogue import CATALOGUE
    from harness.sweep.runtask import failed as _failed
    from harness.sweep.storage import read_failure

    store = open_store(str(tmp_path / "store"))
    arm = CATALOGUE.family("fusion").arm("rrf-60")
    error = RuntimeError("could not connect\nhost=db user=me password=hunter2 dbname=x")
    assert _failed(store, "s1", arm, "0" * 64, error) == 1
    recorded = str((read_failure(store, "s1", arm) or {})["error"])
    assert "\n" not in recorded and "hunter2" not in recorded and "password=***" in recorded
