"""The flags and inputs jobs.arm and jobs.legs share (their mains run under jobs.entrypoint)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any


def group_flags(p: argparse.ArgumentParser, env: Any, arm_help: str, legs_help: str) -> None:
    """The flags jobs.arm and jobs.legs share, each defaulting to its RAGSWEEP_* twin (``env``: Settings)."""
    from pathlib import Path

    from harness.model import BACKENDS, EMBEDDING_BACKENDS

    p.add_argument("--state", type=Path, default=env.state)
    p.add_argument("--store", default=env.store)
    p.add_argument("--sweep-id", default=env.sweep_id)
    p.add_argument("--arm-json", default=env.arm, help=arm_help)
    p.add_argument("--legs", default=env.legs, help=legs_help)
    p.add_argument("--s3-endpoint", default=env.s3_endpoint)
    p.add_argument("--backend", choices=BACKENDS, default=env.backend,
                   help="embedded: the state's own index; stack: its OpenSearch index (RAGSWEEP_OPENSEARCH_URL)")
    p.add_argument("--embedding-backend", choices=EMBEDDING_BACKENDS, default=env.embedding_backend,
                   help="what encodes the queries (torch or onnx): what built the state's index")


def require(p: argparse.ArgumentParser, args: argparse.Namespace, names: Sequence[str]) -> None:
    """A usage error (exit 2) naming every missing flag and its RAGSWEEP_* twin."""
    missing = [n for n in names if not getattr(args, n)]
    if missing:
        p.error("missing " + ", ".join("--" + m.replace("_", "-") for m in missing) + " (or their RAGSWEEP_* env)")


def parse_arms(text: str) -> list[Any]:
    """``--arm-json``: one arm spec, or a JSON list of them."""
    from harness.sweep.catalogue import Arm

    doc = json.loads(text)
    return [Arm.model_validate(a) for a in (doc if isinstance(doc, list) else [doc])]
