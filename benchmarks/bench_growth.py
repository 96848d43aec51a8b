"""Cost as the corpus grows: state build, retrieval latency and the fusion family at several sizes.

    python benchmarks/bench_growth.py --synthetic-from var/synthetic/full-20260812 --meetings 25,50,100,200 \\
        [--qmsum var/corpora/qmsum] [--cold-max-meetings 200] [--workers 2] [--stack auto|off] \\
        [--work var/bench/growth] [--plot docs/growth.svg]

For each size (a synthetic selection of N meetings, ``synth select --budget N``; with ``--qmsum``
also the two-corpus state: the largest selection plus QMSum), one after another:

* ``cold build``: ``state build`` with a fresh, empty embedding cache (every text encoded), for
  synthetic sizes up to ``--cold-max-meetings``; seconds and the build process's peak RSS;
* ``warm build``: the same build again from the cache the cold build filled (larger sizes: from
  the machine's, $RAGSWEEP_MACHINE_CACHE/embeddings; built twice if the first had texts to encode), which is
  what a rebuild costs: chunking, indexing, vectors read from the cache; seconds and peak RSS;
* ``embedded``: the fusion family through the local executor, its control arm alone (one
  process) and the ten arms with legs shared (``--workers``), wall seconds each, and the control
  arm's per-query retrieval latency p50/p95 (concurrency 1, as its runinfo.json records it);
* ``stack`` (when the local stack is up: ``make stack-up``): a ``--backend stack`` build of the
  same corpora (warm cache; its seconds include the embedded index, so the difference from the
  warm build is OpenSearch's share: indexing and settling), then the
  control arm on OpenSearch with exact script-score kNN and with HNSW, each query also timed on
  the embedded backend in the same run (``--time-also embedded``); p50/p95 of both and how many
  ranked lists agreed.

Then, for every measured cost, the ratio to the previous size beside the ratio of index
documents (chunks + digests), and the exponent b of cost ~ documents^b fitted by least squares
on the log-log points (b = 1: linear). Results go to ``--work``/growth.json (what each size was:
corpora, documents, state identity; durations are this benchmark's whole output), and the plot
of cost against documents to ``--plot``. A benchmark, not a test: nothing fails on a slow machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_backends import stack_env  # noqa: E402

# Runs a command and writes its peak RSS (the largest descendant's, KiB) to the file named by argv[1].
_PEAK = ("import resource, subprocess, sys\n"
         "code = subprocess.run(sys.argv[2:]).returncode\n"
         "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
         "sys.exit(code)\n")


def _ragsweep() -> str:
    return str(Path(sys.executable).with_name("ragsweep"))


def _timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Run ``command`` quietly; its wall seconds, peak RSS in MiB and stderr. A failure stops the benchmark."""
    with tempfile.NamedTemporaryFile(prefix="growth-rss-") as peak:
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _PEAK, peak.name, *command], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        seconds = time.perf_counter() - t0
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or [""])[-1]
            raise SystemExit(f"bench_growth: {' '.join(command[1:4])} exited {done.returncode}: {last}")
        return seconds, int(Path(peak.name).read_text() or 0) / 1024, done.stderr


def _documents(state: Path) -> int:
    return int(json.loads((state / "state.json").read_text())["index"]["documents"])


def _identity(state: Path) -> dict[str, Any]:
    info = json.loads((state / "state.json").read_text())
    return {"corpora": [{k: c.get(k) for k in ("name", "files", "queries", "artefacts_sha256")}
                        for c in info["corpora"]],
            "documents": info["index"]["documents"], "embedding": info["index"].get("embedding")}


def _build(corpora: list[str], out: Path, cache: str | None, env: dict[str, str] | None = None,
           backend: str = "embedded") -> dict[str, float]:
    command = [_ragsweep(), "state", "build", *[x for c in corpora for x in ("--corpus", c)], "--out", str(out),
               "--force", "--backend", backend]
    if cache is not None:
        command += ["--embedding-cache", cache]
    seconds, rss, err = _timed(command, env)
    encoded = sum(int(m) for m in re.findall(r"texts cached, (\d+) encoded", err))
    return {"seconds": round(seconds, 2), "peak_rss_mib": round(rss, 1), "encoded": encoded}


def _warm(corpora: list[str], out: Path, cache: str | None, env: dict[str, str] | None = None,
          backend: str = "embedded") -> dict[str, float]:
    """A build whose texts are all in the cache: built again when the first had texts to encode."""
    first = _build(corpora, out, cache, env, backend)
    if not first["encoded"]:
        return first
    return {**_build(corpora, out, cache, env, backend), "first_build_encoded": first["encoded"]}


def _family(state: Path, workers: int) -> dict[str, Any]:
    """The fusion control alone, then the fusion family with legs shared: walls and the control's latency."""
    from harness.sweep.catalogue import CATALOGUE
    from harness.sweep.executor import LocalExecutor

    family = CATALOGUE.family("fusion")
    found: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-growth-") as tmp:
        for name, arms in (("alone", [family.control_arm]), ("family", list(family.arms))):
            executor = LocalExecutor(state=state, store_spec=str(Path(tmp) / name), workers=workers, quiet=True)
            t0 = time.perf_counter()
            report = executor.run(arms, "fusion")
            found[f"{name}_seconds"] = round(time.perf_counter() - t0, 2)
            failed = [o.arm.name for o in report.outcomes if o.status != "published"]
            if failed:
                raise SystemExit(f"bench_growth: {state}: not published: {', '.join(failed)}")
        runinfo = json.loads((Path(tmp) / "alone" / "sweeps" / "fusion" / "fusion" / family.control_arm.name
                              / "runinfo.json").read_text())
    latency = runinfo["retrieval_latency_ms"]
    found.update(queries=latency["samples"], p50_ms=round(latency["p50"], 2), p95_ms=round(latency["p95"], 2))
    found["family_over_alone"] = round(found["family_seconds"] / found["alone_seconds"], 3)
    return found


def _stack(state: Path, env: dict[str, str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for knn in ("exact", "hnsw"):
        with tempfile.TemporaryDirectory(prefix="bench-growth-") as tmp:
            out = Path(tmp) / "out"
            seconds, _, _ = _timed([_ragsweep(), "bench", "--state", str(state), "--control-name", f"growth-{knn}",
                                 "--backend", "stack", "--knn", knn, "--time-also", "embedded", "--workers", "1",
                                 "--out", str(out)], env)
            runinfo = json.loads((out / "runinfo.json").read_text())
        by = runinfo["retrieval_latency_ms_by_backend"]
        agreement = runinfo["backend_agreement"]
        found[knn] = {"seconds": round(seconds, 2),
                      **{f"{b}_{p}_ms": round(by[b][p], 2) for b in ("stack", "embedded") for p in ("p50", "p95")},
                      "identical_ranked_lists": agreement["identical_ranked_lists"],
                      "identical_top10": agreement["identical_top10"], "queries": agreement["queries"]}
    return found


def _exponent(points: list[tuple[float, float]]) -> float | None:
    """b in cost = a * documents^b, least squares on the logs; None under two positive points."""
    pts = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return round(sum((x - mx) * (y - my) for x, y in pts) / sxx, 3) if sxx else None


# (label, path into a size's record): the costs the table, the exponents and the plot report.
COSTS = (("cold build s", ("cold_build", "seconds")), ("cold build peak MiB", ("cold_build", "peak_rss_mib")),
         ("warm build s", ("warm_build", "seconds")), ("warm build peak MiB", ("warm_build", "peak_rss_mib")),
         ("embedded p50 ms", ("embedded", "p50_ms")), ("embedded p95 ms", ("embedded", "p95_ms")),
         ("fusion arm alone s", ("embedded", "alone_seconds")), ("fusion family s", ("embedded", "family_seconds")),
         ("stack build s", ("stack_build", "seconds")),
         ("OpenSearch exact p50 ms", ("stack", "exact", "stack_p50_ms")),
         ("OpenSearch exact p95 ms", ("stack", "exact", "stack_p95_ms")),
         ("OpenSearch HNSW p50 ms", ("stack", "hnsw", "stack_p50_ms")),
         ("OpenSearch HNSW p95 ms", ("stack", "hnsw", "stack_p95_ms")))


def _get(record: dict[str, Any], path: tuple[str, ...]) -> float | None:
    value: Any = record
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return float(value)


def report(sizes: list[dict[str, Any]]) -> dict[str, float | None]:
    """Print the table (costs by size, ratio to the previous size) and return the fitted exponents."""
    print("\nsize\tdocuments\t" + "\t".join(label for label, _ in COSTS))
    previous: dict[str, Any] | None = None
    for record in sizes:
        cells = []
        for _, path in COSTS:
            value = _get(record, path)
            before = _get(previous, path) if previous else None
            cells.append("-" if value is None else f"{value:.1f}" + (f" ({value / before:.2f}x)" if before else ""))
        ratio = f" ({record['documents'] / previous['documents']:.2f}x)" if previous else ""
        print(f"{record['label']}\t{record['documents']}{ratio}\t" + "\t".join(cells))
        previous = record
    exponents = {label: _exponent([(r["documents"], v) for r in sizes if (v := _get(r, path)) is not None])
                 for label, path in COSTS}
    print("\nfitted exponent b (cost ~ documents^b):")
    for label, b in exponents.items():
        if b is not None:
            print(f"  {label:26s} {b:.2f}")
    return exponents


def plot(sizes: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    panels = ((axes[0], "seconds", [c for c in COSTS if c[0].endswith(" s")]),
              (axes[1], "milliseconds per query", [c for c in COSTS if c[0].endswith(" ms")]))
    for ax, unit, costs in panels:
        for label, path in costs:
            pts = [(r["documents"], v) for r in sizes if (v := _get(r, path)) is not None]
            if pts:
                b = _exponent(pts)
                ax.plot(*zip(*pts, strict=True), marker="o", label=f"{label} (b={b:.2f})" if b is not None else label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("index documents (chunks + digests)")
        ax.set_ylabel(unit)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_title("build and sweep wall time")
    axes[1].set_title("retrieve-stage latency, concurrency 1")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, metadata={"Date": None} if out.suffix == ".svg" else None)
    print(f"plot: {out}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--synthetic-from", type=Path, required=True, help="a generated corpus to select sizes from")
    p.add_argument("--meetings", default="25,50,100,200", help="comma-separated selection budgets")
    p.add_argument("--qmsum", type=Path, help="QMSum: also measure the largest selection plus QMSum")
    p.add_argument("--cold-max-meetings", type=int, default=200, help="cold builds for selections up to this")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--stack", choices=("auto", "off"), default="auto")
    p.add_argument("--work", type=Path, default=ROOT / "var" / "bench" / "growth")
    p.add_argument("--plot", type=Path, default=ROOT / "docs" / "growth.svg")
    args = p.parse_args()
    budgets = sorted(int(m) for m in args.meetings.split(","))
    env = stack_env() if args.stack == "auto" else None
    args.work.mkdir(parents=True, exist_ok=True)
    stack = "up" if env else "off" if args.stack == "off" else "not up (make stack-up): not measured"
    print(f"bench_growth: sizes {budgets} meetings{' + two-corpus' if args.qmsum else ''}; {os.cpu_count()} cores; "
          f"stack {stack}")
    plan: list[tuple[str, list[str], bool]] = []
    for budget in budgets:
        corpus = args.work / f"synthetic-{budget}"
        if not (corpus / "corpus.json").is_file():
            subprocess.run([_ragsweep(), "synth", "select", "--from", str(args.synthetic_from), "--budget",
                            str(budget), "--out", str(corpus), "--force"], check=True, cwd=ROOT,
                           stdout=subprocess.DEVNULL)
        plan.append((f"synthetic-{budget}", [f"synthetic={corpus}"], budget <= args.cold_max_meetings))
    if args.qmsum:
        plan.append(("two-corpus", [*plan[-1][1], f"qmsum={args.qmsum}"], False))
    sizes: list[dict[str, Any]] = []
    for label, corpora, cold in plan:
        state = args.work / f"state-{label}"
        record: dict[str, Any] = {"label": label}
        if cold:  # a fresh cache: every text encoded; then the rebuild from it
            with tempfile.TemporaryDirectory(prefix="growth-cache-") as cache:
                record["cold_build"] = _build(corpora, state, cache)
                record["warm_build"] = _warm(corpora, state, cache)
        else:  # the machine's cache ($RAGSWEEP_MACHINE_CACHE/embeddings)
            record["warm_build"] = _warm(corpora, state, None)
        record["documents"] = _documents(state)
        record["state"] = _identity(state)
        print(f"{label}: {record['documents']} documents; build {record.get('cold_build', '-')} cold, "
              f"{record['warm_build']} warm", flush=True)
        record["embedded"] = _family(state, args.workers)
        print(f"{label}: embedded {record['embedded']}", flush=True)
        if env is not None:
            stack_state = args.work / f"stack-{label}"
            record["stack_build"] = _warm(corpora, stack_state, None, env, backend="stack")
            record["stack"] = _stack(stack_state, env)
            print(f"{label}: stack build {record['stack_build']}, {record['stack']}", flush=True)
        sizes.append(record)
        (args.work / "growth.json").write_text(json.dumps({"sizes": sizes}, indent=2, sort_keys=True) + "\n")
    exponents = report(sizes)
    (args.work / "growth.json").write_text(json.dumps({"sizes": sizes, "exponents": exponents, "cores": os.cpu_count(),
                                                       "workers": args.workers}, indent=2, sort_keys=True) + "\n")
    plot(sizes, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
