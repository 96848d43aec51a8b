"""``ragsweep report``: pages built from results files (``report reproduction``: docs/reproduction.md), and
``report reproduction-check``: a committed control re-derived and compared (baselines/README.md)."""

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
    register_check(sub)


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


def register_check(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        "reproduction-check", help="re-derive a committed control (expected.json) on a state and compare every cell",
        description="Runs the commands in --expected (the stage-1 bench runs) over --state into --work, and "
                    "compares every cell (scope x class x measure, and n) with the expected values. On the "
                    "state's identity it was derived on, every cell must be exactly equal; on another identity "
                    "with the same claim (corpora and checksums, chunking, embedding model: another machine's "
                    "vector bits) each cell must be within the file's tolerance; another claim is refused "
                    "before any run. Prints the rule applied, one line per scope with the cells checked, and "
                    "one line per moved cell. --derive writes --expected from fresh runs instead (a deliberate "
                    "re-baseline).",
        epilog="Exit codes: 0 every cell as expected (or derived); 2 usage (--work not the check's scratch "
               "folder, --expected not a control's file); 4 --expected or a run's metrics.json malformed; 5 a "
               "cell moved, or the state is not comparable (another claim, named), or damaged; 9 --work or "
               "--expected cannot be written (checked before any run); a bench run's own code when it fails.")
    c.add_argument("--expected", type=Path, required=True, metavar="FILE",
                   help="the control's expected.json (e.g. baselines/qmsum-stage1-control/expected.json)")
    c.add_argument("--state", type=Path, required=True, help="the state to re-derive on")
    c.add_argument("--work", type=Path, default=Path("var/reproduction-check"), metavar="DIR",
                   help="scratch folder for the runs, emptied first (default var/reproduction-check; a folder "
                        "that is not the check's own is refused)")
    c.add_argument("--workers", type=int, default=1, help="concurrent queries per run (the scores do not depend on it)")
    c.add_argument("--derive", action="store_true",
                   help="write --expected from fresh runs on --state (beside, then renamed) instead of checking")
    c.set_defaults(func=reproduction_check)


def reproduction_check(args: argparse.Namespace) -> int:
    from harness.errors import IntegrityError, UsageError
    from harness.outputfiles import check_writable
    from harness.report.files import dumps, write_files
    from harness.reproduction import control

    if args.workers < 1:
        raise UsageError(f"--workers {args.workers}: expected 1 or more")
    if args.derive:
        if args.expected.exists():
            control.read_expected(args.expected)  # replaces only a control's file
        check_writable(args.expected, "--expected", beside=True)
        template = control.stage1_control()
        got = control.run_commands(template.runs, state=args.state, work=args.work, workers=args.workers,
                                   corpus=template.corpus)
        derived = control.derive_doc(template, got, args.state, str(args.state))
        write_files(args.expected.parent, {args.expected.name: dumps(derived)}, flag="--expected")
        cells = sum(len(m) for run in got.values() for m in run.values())
        print(f"derived {args.expected}: {cells} cells on {args.state} "
              f"(identity {derived['state']['identity'][:12]})")
        return 0
    doc = control.read_expected(args.expected)
    rule = control.rule_for(doc, args.state, str(args.expected))  # before any run: another claim is refused
    print(rule.line)
    got = control.run_commands(doc.runs, state=args.state, work=args.work, workers=args.workers, corpus=doc.corpus)
    verdicts = control.compare_cells(doc, got, rule)
    for verdict in verdicts:
        print(f"scope {verdict.scope}: {verdict.checked} cells checked, "
              f"{f'{len(verdict.moved)} moved' if verdict.moved else 'all as expected'}")
    moved = [line for verdict in verdicts for line in verdict.moved]
    for line in moved:
        print(line)
    if moved:
        raise IntegrityError(f"{doc.name}: {len(moved)} cell(s) moved from {args.expected} "
                             f"({'exact rule' if rule.same_identity else 'tolerance rule'}); results in {args.work}")
    print(f"{doc.name}: reproduced ({sum(v.checked for v in verdicts)} cells; results in {args.work})")
    return 0
