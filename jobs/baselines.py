"""Re-derive the committed baselines and compare them byte for byte (harness.sweep.baselines).

    python -m jobs.baselines check [--ci] [NAME ...]
    python -m jobs.baselines derive NAME ...     # re-derive and overwrite (a deliberate re-baseline)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.errors import EXIT_INTEGRITY
from harness.inputfiles import read_input_text
from harness.report.files import write_files
from harness.sweep.baselines import BASELINES, ROOT, Checked, check, derive, load
from jobs import entrypoint


def _print_verdict(verdict: Checked) -> None:
    if verdict.verdict == "skip":
        print(f"skip   {verdict.name} ({verdict.why_skipped})")
    else:
        print(f"{verdict.verdict}     {verdict.name}")


def _check_command(names: Sequence[str], *, ci_only: bool, work_root: Path) -> int:
    verdicts = check(names, ci_only=ci_only, work_root=work_root, on_result=_print_verdict)
    problems = [p for v in verdicts for p in v.problems]
    for p in problems:
        print(f"  {p}", file=sys.stderr)
    if all(v.verdict == "skip" for v in verdicts):
        print("no baseline was checked", file=sys.stderr)
        return EXIT_INTEGRITY
    return EXIT_INTEGRITY if problems else 0


def main(argv: Sequence[str] | None = None) -> int:
    return entrypoint("jobs.baselines", _main, argv)


def _main(argv: Sequence[str] | None) -> int:
    p = argparse.ArgumentParser(prog="python -m jobs.baselines")
    p.add_argument("command", choices=["check", "derive"])
    p.add_argument("names", nargs="*")
    p.add_argument("--ci", action="store_true", help="only the baselines marked ci")
    p.add_argument("--work", type=Path, default=ROOT / "var" / "baselines-work")
    args = p.parse_args(argv)
    if args.command == "derive":
        for name in args.names:
            results = derive(BASELINES / name, args.work / name)
            files = load(BASELINES / name)["files"]
            # every file read before any is replaced, and all renamed in together (write_files)
            texts = {file: read_input_text(results / file) for file in files}
            write_files(BASELINES / name, texts, flag="")
            print(f"derived {name}")
        return 0
    return _check_command(args.names, ci_only=args.ci, work_root=args.work)


if __name__ == "__main__":
    sys.exit(main())
