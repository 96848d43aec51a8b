"""Re-derive the committed baselines and compare them byte for byte (harness.sweep.baselines).

    python -m jobs.baselines check [--ci] [NAME ...]
    python -m jobs.baselines derive NAME ...     # re-derive and overwrite (a deliberate re-baseline)
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.errors import HarnessError
from harness.sweep.baselines import BASELINES, ROOT, check, derive, load


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jobs.baselines")
    p.add_argument("command", choices=["check", "derive"])
    p.add_argument("names", nargs="*")
    p.add_argument("--ci", action="store_true", help="only the baselines marked ci")
    p.add_argument("--work", type=Path, default=ROOT / "var" / "baselines-work")
    args = p.parse_args(argv)
    try:
        if args.command == "derive":
            for name in args.names:
                results = derive(BASELINES / name, args.work / name)
                for file in load(BASELINES / name)["files"]:
                    shutil.copyfile(results / file, BASELINES / name / file)
                print(f"derived {name}")
            return 0
        return check(args.names, ci_only=args.ci, work_root=args.work)
    except HarnessError as e:
        print(f"baselines: error: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
