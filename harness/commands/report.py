"""``ragsweep report``: pages built from results files (``report reproduction``: docs/reproduction.md)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("report", help="pages built from results files (reproduction: the methodology's "
                                             "tables beside ours)")
    sub = p.add_subparsers(dest="report_command", metavar="PAGE", required=True)
    r = sub.add_parser(
        "reproduction", help="docs/reproduction.md: every methodology table ragsweep can re-derive, side by side",
        description="Reads ROOT/sweeps/*/comparison.json and BENCH_DIR/*/metrics.json, sets every number the "
                    "methodology prints beside ours with the difference, and explains each difference over 0.01 "
                    "from harness/reproduction/explanations.json (or says it is unexplained). A table with no "
                    "results file says what to run. Same inputs, same bytes.",
        epilog="Exit codes: 0 written; 2 usage (e.g. a --sweep-id with no comparison.json); 4 a results file "
               "that does not parse or fit its model (named on one line; nothing is written); 9 --out cannot "
               "be written (read-only, full; checked before reading anything).")
    r.add_argument("--sweeps", type=Path, default=Path("var"), metavar="ROOT",
                   help="the artefact store root the sweeps wrote to (their --out; default var)")
    r.add_argument("--sweep-id", action="append", default=[], metavar="ID",
                   help="read only these sweeps (repeatable); default every sweep under ROOT/sweeps, each "
                        "family's taken from one by the rule the page states (docs/sweeps.md)")
    r.add_argument("--bench-dir", type=Path, default=Path("var/bench"), metavar="DIR",
                   help="folder of bench runs, each DIR/<run>/metrics.json, and DIR/qmsum-bm25.json (default "
                        "var/bench; `make scopes` writes the stage-1 scope runs and the QMSum self-report there)")
    r.add_argument("--out", type=Path, required=True, metavar="FILE", help="the page to write (atomically)")
    r.set_defaults(func=reproduction)


def reproduction(args: argparse.Namespace) -> int:
    from harness.errors import UsageError
    from harness.outputfiles import check_writable
    from harness.report.files import write_files
    from harness.reproduction.page import build_page
    from harness.reproduction.render import HEADER
    from harness.reproduction.sources import ReproductionInputs

    if args.out.is_dir():
        raise UsageError(f"--out {args.out} is a folder; expected the page's file path (e.g. docs/reproduction.md)")
    title = HEADER.splitlines()[0]
    if args.out.is_file() and args.out.stat().st_size and not _starts_with(args.out, title):
        raise UsageError(f"--out {args.out} is not a reproduction page (its first line is not {title!r}): "
                         "the page replaces only itself; choose another path")
    check_writable(args.out, "--out")  # before reading every results file
    inputs = ReproductionInputs(sweeps_root=args.sweeps, bench_dir=args.bench_dir,
                                sweep_ids=tuple(dict.fromkeys(args.sweep_id)))
    page = build_page(inputs)
    (written,) = write_files(args.out.parent, {args.out.name: page.text})
    print(f"reproduction: {written} from {len(page.sources)} files")
    return 0


def _starts_with(path: Path, line: str) -> bool:
    with path.open("rb") as fh:
        return fh.read(len(line.encode("utf-8"))) == line.encode("utf-8")
