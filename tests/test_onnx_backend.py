"""The ONNX embedding backend (harness.index.onnx_backend): the packaged model's transformer exported
locally and run by onnxruntime inside the batch-independent encoder.

Its identity is not torch's, so the embedding cache never answers one with the other's vectors;
its vectors are batch-independent as torch's are, and within ``AGREEMENT`` of them per component;
asking for it without onnxruntime is a one-line usage error (exit 2) before any model loads.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.errors import EXIT_USAGE, IntegrityError, UsageError
from harness.index.embedcache import CachingEmbedder, model_folder_name, model_key

FIXTURE = Path(__file__).parent / "fixtures" / "qmsum"
# the largest per-component difference from torch's vectors accepted (measured: about 3e-7,
# docs/embedding-cache.md, ONNX backend)
AGREEMENT = 1e-5
TEXTS = ["Project Manager: the remote control needs a bigger battery", "yes", "okay, so the budget",
         "Marketing: our survey says people lose their remotes", "Industrial Designer: rubber buttons",
         "the meeting decided to postpone the budget review", "hello world", "a", "the remote, the remote",
         "User Interface: a scroll wheel like the mouse", "yes", "and speech recognition?"]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.fixture(scope="module")
def embedders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    pytest.importorskip("sentence_transformers", reason="the embed extra is not installed")
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (pip install 'ragsweep[onnx]')")
    pytest.importorskip("onnxscript", reason="onnxscript is not installed (pip install 'ragsweep[onnx]')")
    from harness.index.embed import SentenceTransformerEmbedder
    from harness.index.encoder import Batching

    # 8 rows per pass (the default fills short lengths to 128): the same rule for both, a fast test
    batching = Batching(max_rows=8)
    torch_embedder = SentenceTransformerEmbedder(batching=batching)
    onnx_embedder = SentenceTransformerEmbedder(batching=batching, backend="onnx",
                                                onnx_dir=tmp_path_factory.mktemp("onnx"))
    return torch_embedder, onnx_embedder


def test_the_identities_and_cache_keys_differ(embedders: tuple[Any, Any]) -> None:
    import onnxruntime

    torch_embedder, onnx_embedder = embedders
    assert onnx_embedder.identity == f"{torch_embedder.identity}+onnx-{onnxruntime.__version__}"
    assert model_folder_name(model_key(onnx_embedder)) != model_folder_name(model_key(torch_embedder))
    encoder = onnx_embedder.describe()["encoder"]
    assert f"onnxruntime {onnxruntime.__version__}" in encoder and "intra-op" in encoder
    assert encoder.startswith(torch_embedder.describe()["encoder"])  # the same batching rule, torch for pooling
    assert onnx_embedder.dimension == torch_embedder.dimension


def test_a_torch_cache_entry_is_never_used_for_onnx(embedders: tuple[Any, Any], tmp_path: Path) -> None:
    torch_embedder, onnx_embedder = embedders
    cached_torch = CachingEmbedder(torch_embedder, tmp_path)
    torch_vectors = cached_torch.encode(TEXTS)
    assert cached_torch.encoded == len(set(TEXTS))
    cached_onnx = CachingEmbedder(onnx_embedder, tmp_path)
    onnx_vectors = cached_onnx.encode(TEXTS)
    assert (cached_onnx.hits, cached_onnx.encoded) == (0, len(set(TEXTS)))
    assert cached_onnx.folder != cached_torch.folder
    assert _same(onnx_vectors, onnx_embedder.encode(TEXTS))
    assert not _same(onnx_vectors, torch_vectors)  # the last bits differ: the reason for the separate key
    again = CachingEmbedder(torch_embedder, tmp_path)
    assert _same(again.encode(TEXTS), torch_vectors) and again.encoded == 0


def test_onnx_vectors_are_batch_independent(embedders: tuple[Any, Any]) -> None:
    _, onnx_embedder = embedders
    whole = onnx_embedder.encode(TEXTS)
    subset = sorted(random.Random(3).sample(range(len(TEXTS)), 5))
    assert _same(onnx_embedder.encode([TEXTS[i] for i in subset]), whole[subset])
    assert _same(onnx_embedder.encode(TEXTS[::-1]), whole[::-1])
    for i in (0, 7):
        assert _same(onnx_embedder.encode([TEXTS[i]])[0], whole[i])
    pieces: dict[str, np.ndarray] = {}
    for part, vectors in onnx_embedder.encode_pieces(sorted(set(TEXTS)), 3):  # the state build's way
        pieces.update(zip(part, vectors, strict=True))
    assert all(_same(pieces[t], whole[TEXTS.index(t)]) for t in TEXTS)


def test_onnx_vectors_agree_with_torchs(embedders: tuple[Any, Any]) -> None:
    torch_embedder, onnx_embedder = embedders
    a, b = torch_embedder.encode(TEXTS), onnx_embedder.encode(TEXTS)
    assert float(np.abs(a - b).max()) <= AGREEMENT
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-6)


def test_the_export_is_kept_once_and_checked(embedders: tuple[Any, Any], tmp_path: Path) -> None:
    from harness.index.onnx_backend import OnnxForward

    _, onnx_embedder = embedders
    folder = onnx_embedder._forward.folder
    record = json.loads((folder / "export.json").read_text(encoding="utf-8"))
    assert record["probe_max_abs_difference"] <= 1e-4 and record["bytes"] == (folder / "model.onnx").stat().st_size
    assert sorted(p.name for p in folder.iterdir()) == [".lock", "export.json", "model.onnx"]  # no temp left
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    with (copy / "model.onnx").open("ab") as fh:
        fh.write(b"\0")
    with pytest.raises(IntegrityError, match=r"does not match its export\.json"):
        OnnxForward(onnx_embedder._model, onnx_embedder.identity.split("+onnx-")[0], tmp_path)


def test_the_ingest_tasks_keep_torch() -> None:
    from harness.index.embed import SentenceTransformerEmbedder

    with pytest.raises(UsageError, match="batch-independent encoder only"):
        SentenceTransformerEmbedder(backend="onnx", batching=None)


def test_without_onnxruntime_the_onnx_backend_is_a_one_line_usage_error(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main
    from harness.index.embed import SentenceTransformerEmbedder

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime -> ImportError
    with pytest.raises(UsageError, match=r"pip install 'ragsweep\[onnx\]'") as raised:
        SentenceTransformerEmbedder(backend="onnx")
    assert raised.value.exit_code == EXIT_USAGE
    code = main(["state", "build", "--corpus", f"qmsum={FIXTURE}", "--manifest", f"qmsum={FIXTURE / 'SOURCES.tsv'}",
                 "--out", str(tmp_path / "state"), "--embedding-backend", "onnx"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_USAGE and err == [f"ragsweep: error: {raised.value!s}"]
    assert not (tmp_path / "state").exists()


def test_the_setting_is_the_flags_twin(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.errors import UsageError
    from harness.settings import settings

    monkeypatch.delenv("RAGSWEEP_EMBEDDING_BACKEND", raising=False)
    assert settings().embedding_backend == "torch"
    monkeypatch.setenv("RAGSWEEP_EMBEDDING_BACKEND", "onnx")
    assert settings().embedding_backend == "onnx"
    monkeypatch.setenv("RAGSWEEP_EMBEDDING_BACKEND", "tensorrt")
    with pytest.raises(UsageError, match=r"^RAGSWEEP_EMBEDDING_BACKEND='tensorrt': Input should be 'torch' or 'onnx'"):
        settings()


def _tiny_bert(seed: int) -> Any:
    import torch

    torch.manual_seed(seed)
    return torch.nn.ModuleDict({"words": torch.nn.Embedding(50, 8), "types": torch.nn.Embedding(2, 8),
                                "head": torch.nn.Linear(8, 1)}).eval()


def _tiny_forward(inner: Any, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
    hidden = inner["words"](input_ids) + inner["types"](token_type_ids)
    return inner["head"]((hidden * attention_mask.unsqueeze(-1)).sum(1))


def _wrapper(inner: Any) -> Any:
    import torch

    class Wrapper(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return _tiny_forward(self.inner, input_ids, attention_mask, token_type_ids)

    return Wrapper().eval()


def _other_name(inner: Any) -> Any:  # the same computation, wrapped by a class of another name on other lines
    import torch

    class SomethingElse(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            # a line more, so the forward's stack trace names other line numbers too
            return _tiny_forward(self.inner, input_ids, attention_mask, token_type_ids)

    return SomethingElse().eval()


def test_the_exports_bytes_carry_no_python_annotations_so_its_sha256_is_the_computations(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (pip install 'ragsweep[onnx]')")
    pytest.importorskip("onnxscript", reason="onnxscript is not installed (pip install 'ragsweep[onnx]')")
    import onnx
    import torch

    from harness.index.onnx_backend import EXPORT_SCHEMA, export_graph

    probe = {"input_ids": torch.tensor([[3, 7, 9, 0], [4, 2, 0, 0]]),
             "attention_mask": torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]]),
             "token_type_ids": torch.tensor([[0, 0, 1, 0], [0, 1, 0, 0]])}
    inner = _tiny_bert(0)
    first = export_graph(_wrapper(inner), probe, tmp_path / "a", output="logits")
    second = export_graph(_other_name(inner), probe, tmp_path / "b", output="logits")
    assert first["schema"] == EXPORT_SCHEMA and first["sha256"] == second["sha256"]
    model = onnx.load(str(tmp_path / "a" / "model.onnx"))
    annotated = [n.name for n in model.graph.node if n.metadata_props or n.doc_string]
    assert model.graph.node and not annotated
    # other weights: another graph (the sha256 still says what is computed)
    assert export_graph(_other_name(_tiny_bert(1)), probe, tmp_path / "c", output="logits")["sha256"] != first["sha256"]
    # an export of the schema before (annotated) is made again, not refused; one whose bytes changed is refused
    record = json.loads((tmp_path / "a" / "export.json").read_text(encoding="utf-8"))
    (tmp_path / "a" / "export.json").write_text(json.dumps({**record, "schema": "ragsweep.onnx-export/1",
                                                            "sha256": "0" * 64}), encoding="utf-8")
    assert export_graph(_wrapper(inner), probe, tmp_path / "a", output="logits")["sha256"] == first["sha256"]
    with (tmp_path / "a" / "model.onnx").open("ab") as fh:
        fh.write(b"\0")
    with pytest.raises(IntegrityError, match=r"does not match its export\.json"):
        export_graph(_wrapper(inner), probe, tmp_path / "a", output="logits")
