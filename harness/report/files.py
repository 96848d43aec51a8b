"""Writing results atomically and deterministically.

JSON: sorted keys, 2-space indent, "\\n" line ends, non-finite floats as the string
"inf"/"-inf"/"nan" (JSON has no infinity). A set of files is written to temporary names
first and renamed only when all are complete, so no reader ever sees half a result and
a failure leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.outputfiles import writing


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def dumps(doc: Any) -> str:
    return json.dumps(_finite(doc), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def read_json_number(value: Any) -> float:
    """A number as dumps() wrote it: a JSON number, or the string "inf"/"-inf"/"nan"."""
    return float(value)


def write_files(out_dir: Path, contents: Mapping[str, str], flag: str = "--out") -> list[Path]:
    """Write name -> text into out_dir atomically as a set; a folder that cannot take them (full,
    read-only) is one line naming it (harness.outputfiles.writing, exit 9), with nothing left behind."""
    with writing(out_dir, flag):
        return _write_files(out_dir, contents)


def _write_files(out_dir: Path, contents: Mapping[str, str]) -> list[Path]:
    created = not out_dir.is_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    staged: list[tuple[str, Path]] = []
    try:
        for name, text in contents.items():
            fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=out_dir)
            staged.append((name, Path(tmp_name)))  # before writing: a write that fails is removed too
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
    except BaseException:
        for _name, tmp in staged:
            tmp.unlink(missing_ok=True)
        if created:
            with contextlib.suppress(OSError):  # only if empty: the folder this call made
                out_dir.rmdir()
        raise
    written = []
    for name, tmp in staged:
        target = out_dir / name
        os.replace(tmp, target)
        written.append(target)
    return written
