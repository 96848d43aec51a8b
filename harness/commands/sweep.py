"""``ragsweep sweep``: run a family of arms in parallel over one state, then collect."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from harness.commands import count
from harness.commands.bench import (
    add_rerank_cache_flag,
    add_rerank_device_flag,
    rerank_cache_from_args,
    rerank_device_from_args,
    rerank_scorer_from_args,
)
from harness.model import BACKENDS, Backend

if TYPE_CHECKING:
    from harness.sweep.catalogue import Arm, Catalogue
    from harness.sweep.k8s.executor import Release


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--arms", default="fusion", help="family names (fusion,budget,pool,diversity,embedding) or all")
    p.add_argument("--manifest", type=Path, default=None, help="your own arms (JSON, see --emit-manifest)")
    p.add_argument("--out", default="var",
                   help="artefact store root (sweeps land in ROOT/sweeps/<id>/): a local folder (default var), "
                        "or s3://BUCKET[/PREFIX] (endpoint from --s3-endpoint)")
    p.add_argument("--s3-endpoint", default=None, help="default: RAGSWEEP_S3_ENDPOINT")
    p.add_argument("--sweep-id", default=None,
                   help="default: {arms}[-stack]-{state identity[:12]}, so a rerun resumes")
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help="embedded (default): the state's own index; stack: its OpenSearch index at "
                        "RAGSWEEP_OPENSEARCH_URL (a state built with --backend stack). A k8s sweep measures what "
                        "the release's launcher settings say (stack); a different --backend is refused")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("sweep", help="run arms in parallel over one state and collect comparison tables")
    sub = p.add_subparsers(dest="sweep_command", metavar="ACTION", required=True)
    r = sub.add_parser("run", help="run the selected arms (skipping complete ones) and collect")
    r.add_argument("--state", type=Path, default=None, help="the corpus state (required unless --corpus)")
    _common(r)
    r.add_argument("--executor", choices=["local", "k8s"], default="local")
    _launch_flags(r)
    r.add_argument("--workers", type=count, default=os.cpu_count() or 1, help="arms at once (default: core count)")
    r.add_argument("--reranker", type=Path, default=None, help="cross-encoder directory for rerank-stage arms")
    add_rerank_cache_flag(r)
    add_rerank_device_flag(r)
    r.add_argument("--no-share-legs", dest="share_legs", action="store_false",
                   help="one process per arm, each fetching its own legs (default: arms whose legs are the same "
                        "run in one process that fetches them once; docs/sweeps.md)")
    r.add_argument("--shard-queries", action="store_true",
                   help="split a retrieve/diversify group's judged queries over its workers, one process per shard, "
                        "and merge: the same bytes as unsharded (off by default; docs/sweeps.md)")
    r.add_argument("--no-latency", dest="latency", action="store_false",
                   help="skip the interleaved latency measurement after the arms (refused when the manifest's gate "
                        "has a latency budget: its verdict needs it)")
    r.add_argument("--latency-again", action="store_true",
                   help="measure latency anew even when no arm ran and latency.json already times every arm")
    r.add_argument("--latency-sample", type=count, default=None, metavar="N",
                   help="judged queries per corpus timed per run of the latency measurement (default 16)")
    r.add_argument("--latency-passes", type=count, default=None, metavar="N",
                   help="passes of control, arm 1, control, arm 2, ... (default 3; docs/sweeps.md)")
    r.set_defaults(func=run)
    c = sub.add_parser("collect", help="(re)write comparison.md/json for a sweep from its artefacts")
    c.add_argument("--state", type=Path, default=None, help="the state, to derive the default sweep id")
    _common(c)
    c.set_defaults(func=collect)
    i = sub.add_parser("id", help="print the default sweep id of --arms over --state (and --backend)")
    i.add_argument("--state", type=Path, required=True)
    i.add_argument("--arms", default="fusion")
    i.add_argument("--backend", choices=BACKENDS, default="embedded")
    i.set_defaults(func=show_id)
    e = sub.add_parser("emit-manifest", help="print the built-in arm catalogue as JSON")
    e.set_defaults(func=emit)


def _launch_flags(r: argparse.ArgumentParser) -> None:
    g = r.add_argument_group("--executor k8s --corpus: a release of its own (docs/kubernetes.md)")
    g.add_argument("--corpus", action="append", default=[], metavar="NAME=DIR",
                   help="instead of --state: install the chart in a new namespace, upload each corpus under its "
                        "name, let the release's injector build the state, then run the arms and the collector "
                        "there and tear it down (KUBECONFIG names the cluster)")
    g.add_argument("--values", action="append", type=Path, default=[], metavar="FILE",
                   help="the chart's values files (default: charts/ragsweep/ci/single-node-values.yaml, "
                        "stack/k8s/no-gpu-values.yaml, var/images/values.yaml)")
    g.add_argument("--backends", default=None, metavar="LIST",
                   help="stack,embedded: measure each in the same release, one after the other (default: what "
                        "the release's settings say)")
    g.add_argument("--keep", action="store_true", help="keep the release and its namespace (the janitor deletes "
                                                         "it once expired)")
    g.add_argument("--namespace", default=None, help="default ragsweep-<corpora hash>-<time>")
    g.add_argument("--pipeline", default=None, help="the namespace's ragsweep.io/pipeline label "
                                                      "(default sweep-<corpora hash>)")
    g.add_argument("--port-forward-port", type=int, default=19000, help="where the store's port-forward listens")


def _launch(args: argparse.Namespace) -> int:
    import shutil

    from harness.errors import UsageError
    from harness.sweep.catalogue import select_arms
    from harness.sweep.executor import catalogue_for
    from harness.sweep.k8s.executor import kube_clients
    from harness.sweep.k8s.launch import ROOT, LaunchPlan, launch, parse_corpora

    if args.state is not None:
        raise UsageError("give --state (arms in a release that exists) or --corpus (a release of its own), not both")
    if args.out.startswith("s3://"):
        raise UsageError(f"--out {args.out}: with --corpus the sweep's files are copied to a local folder; "
                         "give one (default var)")
    corpora = parse_corpora(args.corpus)
    rerank = [a.name for a in select_arms(catalogue_for(args.manifest), args.arms) if a.needs_reranker]
    if rerank and args.reranker is None:  # before a release is installed and a corpus injected for it
        raise UsageError(f"arms {', '.join(rerank)} run the rerank stage and need --reranker DIR "
                         "(ragsweep reranker train --out DIR)")
    values = tuple(args.values) or (ROOT / "charts/ragsweep/ci/single-node-values.yaml",
                                    ROOT / "stack/k8s/no-gpu-values.yaml", ROOT / "var/images/values.yaml")
    for v in values:
        if not v.is_file():
            raise UsageError(f"--values {v}: no such file" + (" (make images writes it)" if v.name == "values.yaml"
                                                              and v.parent.name == "images" else ""))
    backends = tuple(b for b in (args.backends or "").split(",") if b)
    bad = sorted(set(backends) - set(BACKENDS))
    if bad:
        raise UsageError(f"--backends {args.backends}: {', '.join(bad)} is not one of {', '.join(BACKENDS)}")
    # the request's own errors first: a missing tool is not what a typo in it should be told
    built = ROOT / "var/tools/bin/helm"
    helm = str(built) if built.is_file() else shutil.which("helm")
    if helm is None:
        raise UsageError("no helm (make k8s-tools builds it into var/tools/bin)")
    plan = LaunchPlan(corpora=corpora, out=Path(args.out), values=values, helm=helm, namespace=args.namespace,
                      pipeline=args.pipeline, keep=args.keep, backends=backends, port=args.port_forward_port)
    return launch(plan, args, kube=lambda: kube_clients(_release().context))


def emit(args: argparse.Namespace) -> int:
    from harness.sweep.manifest import emit_manifest

    print(emit_manifest(), end="")
    return 0


def _sweep_id(args: argparse.Namespace) -> str:
    from harness.errors import UsageError
    from harness.sweep.executor import default_sweep_id, state_identity

    if args.sweep_id:
        return str(args.sweep_id)
    if args.state is None:
        raise UsageError("give --sweep-id or --state")
    return default_sweep_id(args.arms, state_identity(args.state, args.backend or "embedded"),
                            args.backend or "embedded")


def show_id(args: argparse.Namespace) -> int:
    from harness.sweep.executor import default_sweep_id, state_identity

    print(default_sweep_id(args.arms, state_identity(args.state, args.backend), args.backend))
    return 0


def _print_comparison(store_spec: str, key: str) -> None:
    if not store_spec.startswith("s3://"):
        print(f"comparison: {Path(store_spec) / key}")
    else:
        print(f"comparison: {store_spec.rstrip('/')}/{key}")


def _settled(args: argparse.Namespace) -> argparse.Namespace:
    """Fill what a flag left unset from the settings (RAGSWEEP_*): the one read of the environment. Then,
    before any work, the store --out names: a folder that can be written (not a file), or an S3 bucket
    at an endpoint that is a URL."""
    from harness.errors import UsageError
    from harness.objectstore import open_store
    from harness.outputfiles import check_writable
    from harness.settings import settings

    args.s3_endpoint = args.s3_endpoint or settings().s3_endpoint
    if args.out.startswith("s3://"):
        open_store(args.out, args.s3_endpoint)  # makes the client: a bad endpoint is refused now
    elif Path(args.out).exists() and not Path(args.out).is_dir():
        raise UsageError(f"--out {args.out} is a file, not a folder (the artefact store's root); choose a folder")
    else:
        check_writable(Path(args.out), "--out")
    return args


def _release() -> Release:
    """Where the k8s launcher finds the release, from the settings (RAGSWEEP_K8S_*; unset: Release's default)."""
    from harness.settings import settings
    from harness.sweep.k8s.executor import Release

    env, default = settings(), Release()
    return Release(
        namespace=env.k8s_namespace, s3_endpoint=env.k8s_s3_endpoint, context=env.k8s_context,
        launcher_config=default.launcher_config if env.k8s_launcher_config is None else env.k8s_launcher_config,
        timeout_s=default.timeout_s if env.k8s_timeout is None else env.k8s_timeout,
        in_cluster=bool(env.kubernetes_service_host))


def run(args: argparse.Namespace) -> int:
    from harness.errors import EXIT_PARTIAL, UsageError
    from harness.settings import settings
    from harness.sweep.catalogue import select_arms
    from harness.sweep.executor import (
        LocalExecutor,
        catalogue_for,
        collect_sweep,
        open_store,
        process_seconds,
        state_identity,
    )
    from harness.sweep.measured import check_sweep_measures
    from harness.sweep.procs import absolute_store, lock_out

    args = _settled(args)
    if args.corpus and args.executor != "k8s":
        raise UsageError("--corpus: a release's injector builds the state, so --executor k8s only (here: "
                         "ragsweep state build --corpus NAME=DIR --out STATE, then --state STATE)")
    if args.state is None and not args.corpus:
        raise UsageError("give --state STATE (or --executor k8s --corpus NAME=DIR ...)")
    if args.executor == "k8s":
        from harness.sweep.k8s.executor import run_from_args

        if args.rerank_backend == "onnx":
            raise UsageError("--rerank-backend onnx: on Kubernetes a rerank arm's Job runs torch on the GPU it asks "
                             "for (the worker image has no onnxruntime); drop the flag, or run --executor local")
        if args.rerank_cache is not None:
            print(f"note: --rerank-cache {args.rerank_cache} is this machine's score cache, used by the local "
                  "executor; on Kubernetes each rerank arm Job keeps its scores on its pod's scratch volume "
                  "(RAGSWEEP_RERANK_CACHE=/tmp/rerank-cache), for that pod only", file=sys.stderr)

        return _launch(args) if args.corpus else run_from_args(args, _release())
    # the arm processes run from the checkout: every path they are given is the caller's, made absolute
    args.state, args.out = args.state.resolve(), absolute_store(args.out)
    args.reranker = args.reranker.resolve() if args.reranker else None
    catalogue = catalogue_for(args.manifest)
    arms = select_arms(catalogue, args.arms)
    if not args.latency and catalogue.gate.latency is not None:
        raise UsageError(f"--no-latency: the gate has a latency budget ({catalogue.gate.latency.describe()}), whose "
                         "verdict needs the interleaved measurement; drop the flag, or the budget from the manifest")
    rerank_cache = rerank_cache_from_args(args)
    if rerank_cache is not None and any(a.needs_reranker for a in arms):  # it takes every pair scored
        from harness.outputfiles import check_writable

        check_writable(rerank_cache, "--rerank-cache")
    state_identity(args.state)  # verified before anything is locked or written (exit 5 names the file)
    sweep_id = _sweep_id(args)
    # one sweep at a time on this --out, from its arms to its collection (harness.sweep.procs)
    with lock_out(args.out):
        check_sweep_measures(open_store(args.out, args.s3_endpoint), sweep_id, args.state)  # one id, one measurement
        executor = LocalExecutor(state=args.state, store_spec=args.out, workers=args.workers, reranker=args.reranker,
                                 s3_endpoint=args.s3_endpoint, backend=args.backend or "embedded", catalogue=catalogue,
                                 share_legs=args.share_legs, shard_queries=args.shard_queries,
                                 rerank_cache=rerank_cache,
                                 rerank_backend=rerank_scorer_from_args(args)[0],
                                 rerank_device=rerank_device_from_args(args),
                                 embedding_backend=settings().embedding_backend,
                                 onnx_cache=Path(settings().onnx_cache))
        report = executor.run(arms, sweep_id)
        started = time.monotonic()
        if args.latency:
            _measure_latency(args, sweep_id, [o.arm for o in report.outcomes if o.status != "failed"], catalogue,
                             ran_any=any(o.status == "published" for o in report.outcomes))
        latency_s, started = time.monotonic() - started, time.monotonic()
        key = collect_sweep(open_store(args.out, args.s3_endpoint), sweep_id, args.arms, args.manifest)
        collect_s = time.monotonic() - started
        ran = [o for o in report.outcomes if o.status == "published"]
        print(f"sweep {sweep_id}: {len(ran)} run, {sum(o.status == 'skipped' for o in report.outcomes)} skipped, "
              f"{len(report.failed)} failed; wall {report.wall_seconds:.1f}s, sum of process times "
              f"{process_seconds(ran, report.legs_seconds):.1f}s on {args.workers} workers; then latency "
              f"{latency_s:.1f}s, collect {collect_s:.1f}s")
        for outcome in report.failed:
            print(f"  failed: {outcome.arm.name}: {outcome.message}", file=sys.stderr)
        _print_comparison(args.out, key)
        return EXIT_PARTIAL if report.failed else 0


def _measure_latency(args: argparse.Namespace, sweep_id: str, arms: list[Arm], catalogue: Catalogue, *,
                     ran_any: bool) -> None:
    """The interleaved latency measurement (harness.sweep.latency), in this process, over the read-only state.

    A rerun that ran no arm keeps the sweep's latency.json when it already times every arm with the same
    design (``--latency-again`` measures anew)."""
    import logging

    from harness.settings import settings
    from harness.sweep.executor import open_store
    from harness.sweep.latency import DEFAULT_PASSES, DEFAULT_SAMPLE, already_measured, measure_sweep

    log = logging.getLogger("harness.sweep.latency")
    store = open_store(args.out, args.s3_endpoint)
    backend: Backend = args.backend or "embedded"
    sample = DEFAULT_SAMPLE if args.latency_sample is None else args.latency_sample  # 0 is refused, not defaulted
    passes = DEFAULT_PASSES if args.latency_passes is None else args.latency_passes
    when = None if ran_any or args.latency_again else already_measured(store, sweep_id, arms, backend=backend,
                                                                        sample=sample, passes=passes)
    if when is not None:
        print(f"latency: latency.json already times these arms (measured {when}); --latency-again measures anew")
        return
    t0 = time.perf_counter()
    measure_sweep(args.state, store, sweep_id, arms, catalogue, backend=backend, sample=sample, passes=passes,
                  opensearch_url=settings().opensearch_url or "", say=log.info)
    print(f"latency: interleaved measurement in {time.perf_counter() - t0:.1f}s")


def collect(args: argparse.Namespace) -> int:
    from harness.sweep.executor import collect_sweep, open_store

    args = _settled(args)
    key = collect_sweep(open_store(args.out, args.s3_endpoint), _sweep_id(args), args.arms, args.manifest)
    _print_comparison(args.out, key)
    return 0
