"""Committed baselines: re-derive them and compare byte for byte.

Each ``baselines/<control-name>/`` holds the committed results (metrics.json,
metrics.md, answers.md when present) and ``baseline.json``::

    {"status": "re-derivable" | "historical",
     "why": "...",
     "ci": true,                       # re-derived by CI on every run
     "commands": [["ragsweep", "synth", "generate", ..., "--out", "{work}/full"], ...],
     "results": "{work}/out",          # where the last command writes the results
     "files": ["metrics.json", "metrics.md"]}

``{work}`` is a scratch folder per baseline, marked as one (``WORK_MARKER``): a derivation
empties it first, and refuses to empty a folder that is not one. ``check`` runs the commands and compares
every listed file with the committed one; any byte that differs fails the check and is
named. A historical baseline is never re-run: re-running it would replace a measurement
of one index with a measurement of another under the same name.
"""

from __future__ import annotations

import difflib
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, InputDataError, UsageError
from harness.outputfiles import check_writable

ROOT = Path(__file__).resolve().parents[2]
BASELINES = ROOT / "baselines"
WORK_MARKER = ".ragsweep-baseline-work"  # what makes a folder a derivation's scratch, which the next one empties


def load(folder: Path) -> dict[str, Any]:
    spec_path = folder / "baseline.json"
    try:
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise InputDataError(f"{spec_path}: missing") from e
    except json.JSONDecodeError as e:
        raise InputDataError(f"{spec_path}:{e.lineno}: not JSON ({e.msg})") from e
    for key in ("status", "why", "files"):
        if key not in spec:
            raise InputDataError(f"{spec_path}: field {key} is missing")
    if spec["status"] not in ("re-derivable", "historical"):
        raise InputDataError(f"{spec_path}: field status must be re-derivable or historical")
    if spec["status"] == "re-derivable" and not spec.get("commands"):
        raise InputDataError(f"{spec_path}: a re-derivable baseline needs commands")
    return dict(spec)


def _expand(argv: Sequence[str], work: Path) -> list[str]:
    out = [a.replace("{work}", str(work)) for a in argv]
    if out and out[0] == "ragsweep":
        out = [sys.executable, "-m", "harness", *out[1:]]
    return out


def derive(folder: Path, work: Path) -> Path:
    """Run ``folder``'s commands in the scratch folder ``work`` (emptied first: only a scratch folder,
    one holding WORK_MARKER, or an empty one); the folder its results are in."""
    spec = load(folder)
    results = Path(spec["results"].replace("{work}", str(work)))
    # a scratch folder: marked, or made before the mark was (it holds this baseline's results)
    scratch = (work / WORK_MARKER).is_file() or any((results / name).is_file() for name in spec["files"])
    if work.exists() and not scratch and (not work.is_dir() or any(work.iterdir())):
        raise UsageError(f"--work: {work} is not a baseline's scratch folder (no {WORK_MARKER}), so it is not "
                         "emptied; choose another --work, or empty it yourself")
    check_writable(work, "--work")
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    (work / WORK_MARKER).write_text(f"scratch of the baseline {folder.name}: emptied by its next derivation\n",
                                    encoding="utf-8")
    for argv in spec["commands"]:
        command = _expand(argv, work)
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
            error = HarnessError(f"{folder.name}: `{' '.join(argv)}` exited {done.returncode}: {tail[0]}")
            error.exit_code = done.returncode  # the command's own documented code, passed on
            raise error
    return results


def compare(folder: Path, results: Path, files: Sequence[str]) -> list[str]:
    problems = []
    for name in files:
        committed, derived = folder / name, results / name
        if not derived.is_file():
            problems.append(f"{folder.name}/{name}: not produced by the commands")
            continue
        if committed.read_bytes() != derived.read_bytes():
            diff = difflib.unified_diff(committed.read_text(encoding="utf-8").splitlines(),
                                        derived.read_text(encoding="utf-8").splitlines(), "committed", "derived",
                                        lineterm="", n=0)
            first = next((line for line in list(diff)[2:] if line.startswith(("-", "+"))), "")
            problems.append(f"{folder.name}/{name}: differs from a fresh derivation (first change: {first[:160]})")
    return problems


@dataclass(frozen=True)
class Checked:
    """One baseline's verdict: ``ok``, ``FAIL`` (with the problems found) or ``skip`` (with why)."""

    name: str
    verdict: str
    why_skipped: str = ""
    problems: tuple[str, ...] = ()


def check(names: Sequence[str], *, ci_only: bool, work_root: Path,
          on_result: Callable[[Checked], None] | None = None) -> list[Checked]:
    """Re-derive every selected re-derivable baseline and compare it; ``on_result`` hears each verdict
    as soon as it is known (a derivation takes a while), and the list of all of them is returned."""
    folders = sorted(p for p in BASELINES.iterdir() if (p / "baseline.json").is_file())
    if names:
        folders = [f for f in folders if f.name in names]
    verdicts: list[Checked] = []
    for folder in folders:
        spec = load(folder)
        if spec["status"] != "re-derivable" or (ci_only and not spec.get("ci")):
            verdict = Checked(folder.name, "skip",
                              why_skipped=f"{spec['status']}{'' if spec.get('ci') else ', not in CI'}")
        else:
            found = compare(folder, derive(folder, work_root / folder.name), spec["files"])
            verdict = Checked(folder.name, "FAIL" if found else "ok", problems=tuple(found))
        verdicts.append(verdict)
        if on_result is not None:
            on_result(verdict)
    return verdicts
