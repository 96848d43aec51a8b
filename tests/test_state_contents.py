"""A state proves what it holds: its identity is a content address over every file that decides a number,
and opening it refuses (exit 5, naming the file) a state whose files are not the ones it was built with.

Each case is one the issue reproduced with a wrong number and exit 0 (vectors replaced, NaN, zero,
shuffled or extra rows; gold spans moved in the corpus; state.json edited)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from harness.corpora.qmsum import read_qmsum
from harness.errors import IntegrityError
from harness.model import Corpus
from harness.state import State, verified_identity
from harness.state.build import build_state
from harness.state.contents import contents_block, identity_of
from tests.test_ingest_eager import FIXTURE, HashEmbedder

VECTORS = "index/vectors-header.npy"


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return read_qmsum(FIXTURE, manifest=FIXTURE / "SOURCES.tsv")


@pytest.fixture(scope="module")
def built(corpus: Corpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("contents") / "state"
    build_state(out, [corpus], {"header": HashEmbedder()})
    return out


@pytest.fixture
def state(built: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "state"
    shutil.copytree(built, copy)
    return copy


def _refused(state: Path, names: str) -> str:
    with pytest.raises(IntegrityError) as caught:
        State.open(state)
    message = str(caught.value)
    assert names in message and "\n" not in message
    return message


def _rewrite_vectors(state: Path, matrix: np.ndarray) -> None:
    np.save(state / VECTORS, matrix.astype(np.float32))


def test_the_same_corpora_built_twice_have_one_identity(corpus: Corpus, built: Path, tmp_path: Path) -> None:
    again = tmp_path / "elsewhere" / "other-name"
    build_state(again, [corpus], {"header": HashEmbedder()})
    first, second = (json.loads((p / "state.json").read_text()) for p in (built, again))
    # tantivy names its segments by a random UUID: the files differ by name, the address does not
    assert set(first["contents"]["files"]) != set(second["contents"]["files"])
    assert first["contents"]["identity"] == second["contents"]["identity"] == verified_identity(again)
    assert State.open(again).identity == first["contents"]["identity"]


def test_another_encoder_gives_another_identity(corpus: Corpus, built: Path, tmp_path: Path) -> None:
    class LastBit(HashEmbedder):  # the same vectors but one last bit, as another CPU's path gives
        def encode(self, texts: list[str]) -> np.ndarray:
            out = super().encode(texts)
            out.view(np.uint32)[0, 0] ^= 1
            return out

    other = tmp_path / "state"
    build_state(other, [corpus], {"header": LastBit()})
    assert verified_identity(other) != verified_identity(built)


def test_one_byte_changed_in_the_vectors_is_refused_naming_the_file(state: Path) -> None:
    raw = bytearray((state / VECTORS).read_bytes())
    raw[-3] ^= 0x01
    (state / VECTORS).write_bytes(bytes(raw))
    assert "sha256" in _refused(state, VECTORS)


@pytest.mark.parametrize("case", ["all-nan", "fifty-rows-nan", "all-zero", "shuffled", "extra-rows", "truncated"])
def test_damaged_vectors_are_refused(state: Path, case: str) -> None:
    matrix = np.load(state / VECTORS)
    if case == "all-nan":
        matrix[:] = np.nan
    elif case == "fifty-rows-nan":
        matrix[:50] = np.nan
    elif case == "all-zero":
        matrix[:] = 0
    elif case == "shuffled":
        matrix = matrix[np.random.default_rng(1).permutation(len(matrix))]
    elif case == "extra-rows":
        matrix = np.concatenate([matrix, matrix[:100]])
    if case == "truncated":
        (state / VECTORS).write_bytes((state / VECTORS).read_bytes()[:-1000])
    else:
        _rewrite_vectors(state, matrix)
    _refused(state, VECTORS)


@pytest.mark.parametrize("case", ["all-nan", "fifty-rows-nan", "all-zero", "extra-rows"])
def test_damaged_vectors_are_refused_even_when_their_digests_are_rerecorded(state: Path, case: str) -> None:
    """A state whose vectors were wrong when it was built (its digests agree with them) is still refused:
    the vectors are checked for shape, dtype, finiteness and unit norm, at build and at open."""
    matrix = np.load(state / VECTORS)
    matrix = {"all-nan": np.full_like(matrix, np.nan), "all-zero": np.zeros_like(matrix),
              "fifty-rows-nan": np.where(np.arange(len(matrix))[:, None] < 50, np.nan, matrix),
              "extra-rows": np.concatenate([matrix, matrix[:100]])}[case]
    _rewrite_vectors(state, matrix)
    manifest = json.loads((state / "state.json").read_text())
    with pytest.raises(IntegrityError, match=r"vectors-header\.npy"):
        contents_block(state, manifest)  # what the build does before it writes state.json


def test_a_build_whose_encoder_gives_nan_leaves_nothing(corpus: Corpus, tmp_path: Path) -> None:
    class Nan(HashEmbedder):
        def encode(self, texts: list[str]) -> np.ndarray:
            out = super().encode(texts)
            out[0] = np.nan
            return out

    with pytest.raises(IntegrityError, match=r"^hash-embedder@1 returned a vector that is not a finite unit vector "
                                             r"for the text '.+' \(1 of \d+ texts in its call\); none of them"):
        build_state(tmp_path / "state", [corpus], {"header": Nan()})
    assert list(tmp_path.iterdir()) == []


def test_gold_spans_moved_in_the_corpus_are_refused(state: Path) -> None:
    path = state / "corpora" / "qmsum.json"
    doc = json.loads(path.read_text())
    spans = [s for q in doc["queries"] for s in q.get("gold", [])]
    assert spans, "the fixture has gold spans"
    files = sorted({m["file_uuid"] for m in doc["meetings"]})
    for span in spans:
        span["file_uuid"] = files[(files.index(span["file_uuid"]) + 1) % len(files)]
    path.write_text(json.dumps(doc))
    _refused(state, "corpora/qmsum.json")


@pytest.mark.parametrize("edit", ["model", "counts"])
def test_an_edited_claim_is_refused(state: Path, edit: str) -> None:
    path = state / "state.json"
    doc = json.loads(path.read_text())
    if edit == "model":
        doc["index"]["embedding"]["header"]["model"] = "someone-else@1"
    else:
        doc["index"]["chunk_documents"] += 1
    path.write_text(json.dumps(doc))
    assert "edited after the build" in _refused(state, "state.json")


@pytest.mark.parametrize("damage", ["empty", "truncated", "not-an-object", "no-contents", "no-index", "old-schema"])
def test_a_damaged_state_json_is_one_line(state: Path, damage: str) -> None:
    path = state / "state.json"
    text = path.read_text()
    doc = json.loads(text)
    if damage == "empty":
        path.write_text("")
    elif damage == "truncated":
        path.write_text(text[: len(text) // 2])
    elif damage == "not-an-object":
        path.write_text("[]")
    elif damage == "old-schema":
        path.write_text(json.dumps({**doc, "schema": "ragsweep.state/1"}))
    else:
        del doc[damage.removeprefix("no-")]
        path.write_text(json.dumps(doc))
    _refused(state, "state.json")


def test_a_deeply_nested_state_json_is_damage_not_an_internal_error(state: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # before: RecursionError, an internal error (exit 1)
    path = state / "state.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert main(["state", "verify", "--state", str(state)]) == 5
    assert capsys.readouterr().err == (f"ragsweep: error: {path}: JSON nested deeper than 100 levels; expected the "
                                       "document the harness writes (a few levels); the state is damaged: rebuild it\n")


@pytest.mark.parametrize("name", ["../../x", "/tmp/x", "Qmsum", "", 7])
def test_a_forged_corpus_name_is_never_a_path(name: object, state: Path, tmp_path: Path) -> None:
    """state.json's corpus name names the state's file corpora/<name>.json. A forged name whose identity was
    re-recorded passed every digest; before, '../../x' opened a corpus planted outside the state."""
    path = state / "state.json"
    doc = json.loads(path.read_text())
    doc["corpora"][0]["name"] = name
    doc["contents"]["identity"] = identity_of(state, doc, doc["contents"]["files"])
    path.write_text(json.dumps(doc))
    shutil.copy(state / "corpora" / "qmsum.json", tmp_path / "x.json")  # where '../../x' leads
    message = _refused(state, "state.json")
    assert message == (f"{path}: corpora[0].name {name!r} is not a corpus name ([a-z0-9][a-z0-9_-]*); the state is "
                       "damaged: rebuild it")


@pytest.mark.parametrize("damage", ["tantivy-missing", "tantivy-cut", "corpus-missing", "docs-cut", "extra-file"])
def test_missing_cut_or_extra_files_are_refused(state: Path, damage: str) -> None:
    segment = next(p for p in sorted((state / "index" / "tantivy").iterdir()) if p.suffix == ".idx")
    if damage == "tantivy-missing":
        segment.unlink()
        _refused(state, segment.name)
    elif damage == "tantivy-cut":
        segment.write_bytes(segment.read_bytes()[:100])
        _refused(state, segment.name)
    elif damage == "corpus-missing":
        (state / "corpora" / "qmsum.json").unlink()
        _refused(state, "corpora/qmsum.json")
    elif damage == "docs-cut":
        docs = state / "index" / "docs.jsonl"
        docs.write_text("".join(docs.read_text().splitlines(keepends=True)[:-1]))
        _refused(state, "docs.jsonl")
    else:
        (state / "index" / "vectors-body.npy").write_bytes(b"planted")
        _refused(state, "vectors-body.npy")


def test_cli_refuses_a_changed_state_with_exit_5_on_one_line(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["state", "verify", "--state", str(state)]) == 0
    assert "identity" in capsys.readouterr().out
    _rewrite_vectors(state, np.load(state / VECTORS)[::-1])
    assert main(["sweep", "id", "--state", str(state), "--arms", "fusion"]) == 5
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and VECTORS in err
    assert main(["state", "verify", "--state", str(state)]) == 5


@pytest.mark.integration
def test_vectors_replaced_after_a_complete_sweep_are_refused_not_reused(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """The issue's case: a complete sweep, then the state's vectors replaced. Before, the rerun reported
    `0 run, 3 skipped` (stale results reused) and an added arm was compared with a stale control. Now the
    rerun is refused before any arm starts, naming the file, and the store is as the first sweep left it."""
    from harness.sweep.catalogue import CATALOGUE
    from harness.sweep.executor import LocalExecutor
    from tests.fixture_state import qmsum_fixture_state

    state = qmsum_fixture_state(tmp_path_factory, "stale")
    fusion = {a.name: a for a in CATALOGUE.family("fusion").arms}
    arms = [fusion["rrf-30-default"], fusion["rrf-60"]]
    store = tmp_path / "store"
    executor = LocalExecutor(state=state, store_spec=str(store), workers=1, quiet=True)
    assert sorted(o.status for o in executor.run(arms, "s1").outcomes) == ["published"] * 2
    before = sorted(p.relative_to(store).as_posix() for p in store.rglob("*") if p.is_file())
    _rewrite_vectors(state, np.load(state / VECTORS)[::-1])
    with pytest.raises(IntegrityError, match=r"vectors-header\.npy"):
        LocalExecutor(state=state, store_spec=str(store), workers=1, quiet=True).run(arms, "s1")
    with pytest.raises(IntegrityError, match=r"vectors-header\.npy"):
        LocalExecutor(state=state, store_spec=str(store), workers=1, quiet=True).run(
            [*arms, fusion["norm-minmax-arith"]], "s1")
    assert sorted(p.relative_to(store).as_posix() for p in store.rglob("*") if p.is_file()) == before


def test_a_read_only_state_opens_and_measures(state: Path) -> None:
    """A state is documented as opened read-only; tantivy takes a lock file beside its index even to read it,
    so a read-only folder failed with an internal error. chattr +i makes a folder read-only even for root
    (CI runs as root, which ignores permission bits)."""
    import subprocess

    for lock in (state / "index" / "tantivy").glob(".tantivy-*.lock"):
        lock.unlink()
    folders = [state, state / "index", state / "index" / "tantivy", state / "corpora"]
    made = subprocess.run(["chattr", "+i", *map(str, folders)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"chattr +i is not available here ({made.stderr.strip()}): cannot make a folder read-only")
    try:
        with pytest.raises(OSError):
            (state / "index" / "tantivy" / "probe").write_text("x")
        opened = State.open(state)
        assert opened.index.bm25("budget", 3)
    finally:
        subprocess.run(["chattr", "-i", *map(str, folders)], check=True)
