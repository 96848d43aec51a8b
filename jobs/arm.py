"""Run one arm: a bench invocation from an arm spec, published to the artefact store.

    python -m jobs.arm --state STATE --store DIR|s3://BUCKET/PREFIX --sweep-id ID --arm-json '{...}'

Every flag has an environment twin (RAGSWEEP_STATE, RAGSWEEP_STORE, RAGSWEEP_SWEEP_ID,
RAGSWEEP_ARM, RAGSWEEP_RERANKER, RAGSWEEP_S3_ENDPOINT, RAGSWEEP_WORKERS, RAGSWEEP_BACKEND), which is how a
Job spec passes them. An arm whose complete artefact set for the same config hash is
already in the store is skipped (exit 0). A failure is published as failed.json (so the
collector names it) and exits with the error's code.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import traceback
from collections.abc import Sequence
from pathlib import Path

from harness.commands.settings import settings
from harness.errors import EXIT_INTERNAL, HarnessError
from harness.model import BACKENDS
from jobs import entrypoint


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    env = settings()
    p = argparse.ArgumentParser(prog="python -m jobs.arm", description=__doc__.split("\n\n")[0])
    p.add_argument("--state", type=Path, default=env.state)
    p.add_argument("--store", default=env.store)
    p.add_argument("--sweep-id", default=env.sweep_id)
    p.add_argument("--arm-json", default=env.arm, help="the arm spec {name, family, axis, config}")
    p.add_argument("--reranker", type=Path, default=env.reranker)
    p.add_argument("--s3-endpoint", default=env.s3_endpoint)
    p.add_argument("--workers", type=int, default=env.workers)
    p.add_argument("--backend", choices=BACKENDS, default=env.backend,
                   help="embedded: the state's own index; stack: its OpenSearch index (RAGSWEEP_OPENSEARCH_URL)")
    args = p.parse_args(argv)
    missing = [n for n in ("state", "store", "sweep_id", "arm_json") if not getattr(args, n)]
    if missing:
        p.error("missing " + ", ".join("--" + m.replace("_", "-") for m in missing) + " (or their RAGSWEEP_* env)")
    return args


def run(args: argparse.Namespace) -> int:
    from harness.bench.config import BenchConfig
    from harness.bench.run import run_bench
    from harness.index.embed import DEFAULT_EMBEDDING_MODEL, SentenceTransformerEmbedder
    from harness.state import State
    from harness.sweep.catalogue import Arm, config_hash
    from harness.sweep.executor import measurement_identity, open_store
    from harness.sweep.storage import ARM_EXTRA_FILES, ARM_FILES, is_complete, publish_arm, publish_failure

    arm = Arm.model_validate(json.loads(args.arm_json))
    store = open_store(args.store, args.s3_endpoint)
    identity = measurement_identity(args.state, arm, args.reranker, args.backend)
    digest = config_hash(arm, identity)
    if is_complete(store, args.sweep_id, arm, digest):
        print(f"{arm.name}: complete for config {digest[:12]}, skipped")
        return 0
    try:
        # The arm's config is bench's own configuration model: handed over as is, never turned back into argv.
        config = BenchConfig(arm=arm.arm_config, control_name=arm.name, workers=args.workers,
                             backend=args.backend, reranker=args.reranker)
        state = State.open(args.state)
        embedder = SentenceTransformerEmbedder(DEFAULT_EMBEDDING_MODEL)
        with tempfile.TemporaryDirectory(prefix=f"arm-{arm.name}-") as tmp:
            run_bench(state, config, embedder, Path(tmp), opensearch_url=settings().opensearch_url,
                      pg_dsn=settings().pg_dsn or "")
            files = {name: (Path(tmp) / name).read_text(encoding="utf-8") for name in (*ARM_FILES, *ARM_EXTRA_FILES)}
        publish_arm(store, args.sweep_id, arm, digest, files, state_identity=identity)
    except BaseException as e:
        message = str(e) if isinstance(e, HarnessError) else f"{type(e).__name__}: {e}"
        publish_failure(store, args.sweep_id, arm, digest, message)
        if not isinstance(e, HarnessError):
            traceback.print_exc()
        print(f"{arm.name}: failed: {message}", file=sys.stderr)
        return e.exit_code if isinstance(e, HarnessError) else EXIT_INTERNAL
    print(f"{arm.name}: published ({digest[:12]})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return entrypoint("jobs.arm", _main, argv)


def _main(argv: Sequence[str] | None) -> int:
    return run(parse(argv))


if __name__ == "__main__":
    sys.exit(main())
