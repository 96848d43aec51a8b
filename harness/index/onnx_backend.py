"""The ONNX embedding backend: the model's transformer exported locally, run by onnxruntime.

Only the transformer (token embeddings) runs in onnxruntime; the model's own pooling (mean over
the attention mask) and normalize modules, and the final L2 normalisation, run in torch exactly
as on the torch path, inside the same batch-independent encoder (harness.index.encoder): one
token length per pass, ``rows_for(length)`` rows, so a text's vector depends only on the text.

The graph is exported once per model (weights digest) with ``torch.onnx.export`` from the
packaged model — never from a hub, never into site-packages — into
``var/cache/onnx/<model identity>/model.onnx`` (a temporary file renamed into place, under a
lock), beside ``export.json`` (the exporter, the file's sha256, and the largest difference from
torch on a probe batch, checked before the file is kept). onnxruntime runs it on the CPU
provider with fixed, recorded thread settings; all of it is in the embedder's ``describe()``,
so the embedding cache keys on it, and the identity gains ``+onnx-<onnxruntime version>``, so
the provenance survey and the bench's query-encoder check never take one backend's vectors for
the other's. onnxruntime, onnx and onnxscript are imported lazily (the ``onnx`` extra).

``export_graph`` exports any BERT-like transformer the same way: the cross-encoder's logits too
(``--rerank-backend onnx``, harness.retrieval.rerank), into a folder named by its weights digest.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from harness.corpora.integrity import sha256_file
from harness.errors import IntegrityError, UsageError
from harness.objectstore import write_atomic

DEFAULT_ONNX_DIR = Path("var/cache/onnx")
# /2: the graph's annotations stripped before it is hashed (an export of /1 is made again, not refused)
EXPORT_SCHEMA = "ragsweep.onnx-export/2"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# the exported graph must give torch's token embeddings on the probe within this, or it is not kept
EXPORT_TOLERANCE = 1e-4
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# texts of different lengths, so the exported graph is traced with a padded attention mask: traced
# with a mask of ones the exporter specialised the mask away and the graph was wrong on padding
_PROBE = ["a short probe", "a longer probe sentence, with punctuation and more words than the first one"]
MISSING = ("the onnx embedding backend needs onnxruntime and onnxscript: pip install 'ragsweep[onnx]' "
           "(or use --embedding-backend torch)")


def require_onnxruntime() -> Any:
    """The onnxruntime module, or a one-line UsageError (exit 2) naming what to install."""
    try:
        import onnxruntime
    except ImportError as e:
        raise UsageError(MISSING) from e
    return onnxruntime


def onnx_identity(identity: str, ort_version: str) -> str:
    """The ONNX backend's model identity: the torch identity (weights digest) + onnxruntime's version."""
    return f"{identity}+onnx-{ort_version}"


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    with (folder / ".lock").open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def wrap_transformer(auto_model: Any, output: str) -> Any:
    """The transformer as a plain torch module: token ids in, ``output`` out (``last_hidden_state``
    for an embedder's token embeddings, ``logits`` for a cross-encoder's scores)."""
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.auto_model = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.auto_model(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=token_type_ids, return_dict=True)
            return getattr(out, output)

    return Wrapped(auto_model).eval()


def probe_inputs(features: Any) -> dict[str, Any]:
    """The three BERT inputs of a tokenised probe, or a one-line UsageError naming the missing ones."""
    missing = [n for n in INPUTS if n not in features]
    if missing:
        raise UsageError(f"the onnx backend exports BERT-like models (inputs {', '.join(INPUTS)}); this model's "
                         f"tokenizer gives no {', '.join(missing)}")
    return {n: features[n] for n in INPUTS}


def export_model(model: Any, folder: Path) -> dict[str, Any]:
    """Export a sentence-transformers embedder's transformer (token embeddings) to ``folder``."""
    probe = probe_inputs(model.preprocess(list(_PROBE)))
    return export_graph(wrap_transformer(model[0].model, "last_hidden_state"), probe, folder, output="token_embeddings")


def export_graph(wrapped: Any, probe: dict[str, Any], folder: Path, *, output: str) -> dict[str, Any]:
    """Export ``wrapped`` (token ids in, ``output`` out) to ``folder/model.onnx`` unless it is there; its
    export record. Checked before it is kept: onnxruntime's output on the padded probe batch against
    torch's (token-level outputs on the real tokens only)."""
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    target, record_path = folder / "model.onnx", folder / "export.json"
    with _locked(folder):
        kept = json.loads(record_path.read_text(encoding="utf-8")) if record_path.is_file() else None
        if kept is not None and target.is_file() and kept.get("schema") == EXPORT_SCHEMA:
            return _checked(kept, target)
        batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
        tmp = folder / f".model-{os.getpid()}.onnx.tmp"
        try:
            # the exporter reports its steps on stdout; commands print their results there
            with contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings(), torch.no_grad():
                # batch and seq share their constraints across the three inputs: the exporter says so per axis
                warnings.filterwarnings("ignore", message="# The axis name", category=UserWarning)
                program = torch.onnx.export(
                    wrapped, tuple(probe[n] for n in INPUTS), str(tmp), input_names=list(INPUTS),
                    output_names=[output], dynamo=True, external_data=False, verbose=False,
                    dynamic_shapes={n: {0: batch, 1: seq} for n in INPUTS})
            opset = _opset(program, tmp)
            strip_annotations(tmp)
            with torch.inference_mode():
                expected = wrapped(*(probe[n] for n in INPUTS)).numpy()
            got = session(tmp, threads=1)[0].run(None, {n: probe[n].numpy() for n in INPUTS})[0]
            gap = np.abs(got - expected)
            if gap.ndim == 3:  # per token: padding positions carry nothing
                gap = gap[probe["attention_mask"].numpy().astype(bool)]
            difference = float(gap.max())
            if not difference <= EXPORT_TOLERANCE:
                raise IntegrityError(f"the exported graph differs from torch by {difference:.3g} on the probe "
                                     f"(tolerance {EXPORT_TOLERANCE}); not kept")
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        record = {"schema": EXPORT_SCHEMA, "sha256": sha256_file(target), "bytes": target.stat().st_size,
                  "exporter": f"torch {torch.__version__} torch.onnx.export(dynamo=True)", "opset": opset,
                  "inputs": list(INPUTS), "output": output,
                  "probe_max_abs_difference": difference}
        write_atomic(record_path, (json.dumps(record, indent=2, sort_keys=True) + "\n").encode("utf-8"))
        return record


def strip_annotations(path: Path) -> None:
    """Rewrite the ONNX file at ``path`` without its annotations: every ``metadata_props`` and
    ``doc_string`` of the model, its graphs (subgraphs too), nodes, values and functions.

    The exporter annotates each node with the Python that traced it: the class names of the modules
    around it, and a stack trace with the source files' paths and line numbers (this checkout's, and
    the virtual environment's). They decide nothing that onnxruntime computes, but they are in the
    file's bytes, so with them the export's sha256 (in the score cache's key and in every onnx arm's
    provenance) would change with the folder the project is checked out in, or a renamed wrapper."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)

    def clear(proto: Any) -> None:
        if hasattr(proto, "metadata_props"):
            del proto.metadata_props[:]
        if hasattr(proto, "doc_string"):
            proto.doc_string = ""

    def nodes(owner: Any) -> None:
        for node in owner.node:
            clear(node)
            for attribute in node.attribute:
                clear(attribute)
                if attribute.HasField("g"):
                    graph(attribute.g)
                for sub in attribute.graphs:
                    graph(sub)

    def graph(g: Any) -> None:
        clear(g)
        for item in (*g.input, *g.output, *g.value_info, *g.initializer, *g.sparse_initializer):
            clear(item)
        nodes(g)

    clear(model)
    graph(model.graph)
    for function in model.functions:
        clear(function)
        nodes(function)
    onnx.save(model, str(path))


def _opset(program: Any, path: Path) -> int | None:
    model = getattr(program, "model_proto", None)
    if model is None:
        import onnx

        model = onnx.load(str(path), load_external_data=False)
    return next((int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), None)


def _checked(record: dict[str, Any], target: Path) -> dict[str, Any]:
    if record.get("schema") != EXPORT_SCHEMA or sha256_file(target) != record.get("sha256"):
        raise IntegrityError(f"{target} does not match its export.json (sha256); delete {target.parent} "
                             "and it is exported again")
    return record


def session(path: Path, *, threads: int) -> tuple[Any, dict[str, Any]]:
    """An onnxruntime session on the CPU provider with fixed settings, and those settings."""
    ort = require_onnxruntime()
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.use_deterministic_compute = True
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    settings = {"onnxruntime": ort.__version__, "provider": "CPUExecutionProvider", "intra_op_threads": threads,
                "inter_op_threads": 1, "execution_mode": "sequential", "graph_optimization": "all",
                "deterministic_compute": True}
    return session, settings


class OnnxForward:
    """The encoder's forward pass with the transformer in onnxruntime: features in, sentence embeddings out
    (the model's remaining modules, pooling and normalize, run in torch as on the torch path)."""

    def __init__(self, model: Any, identity: str, root: Path = DEFAULT_ONNX_DIR, *, threads: int | None = None) -> None:
        import torch

        require_onnxruntime()
        self.model = model
        self.folder = Path(root) / _UNSAFE.sub("_", identity)
        self.export = export_model(model, self.folder)
        self.threads = int(threads if threads is not None else torch.get_num_threads())
        self.session, self.settings = session(self.folder / "model.onnx", threads=self.threads)
        self.rest = list(model)[1:]

    def __call__(self, features: dict[str, Any]) -> Any:
        import torch

        token_embeddings = self.session.run(None, {n: features[n].numpy() for n in INPUTS})[0]
        out = {**features, "token_embeddings": torch.from_numpy(np.ascontiguousarray(token_embeddings))}
        for module in self.rest:
            out = module(out)
        return out["sentence_embedding"]

    def describe(self) -> str:
        s, e = self.settings, self.export
        return (f"transformer in onnxruntime {s['onnxruntime']} ({s['provider']}, {s['intra_op_threads']} intra-op "
                f"thread(s), {s['inter_op_threads']} inter-op, {s['execution_mode']}, graph optimization "
                f"{s['graph_optimization']}, deterministic compute), model.onnx sha256 {e['sha256'][:16]} "
                f"({e['exporter']}, opset {e['opset']}); pooling and normalize in torch")
