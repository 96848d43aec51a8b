"""Reading a file the user named: every way it can be unreadable is one line naming it.

A missing file, a folder where a file belongs, or bytes that are not UTF-8 are invalid
input (exit 4), not an internal error. Shared by every stage, like :mod:`harness.errors`.
"""

from __future__ import annotations

from pathlib import Path

from harness.errors import InputDataError


def read_input_text(path: Path, label: str | None = None) -> str:
    """The UTF-8 text of ``path``; ``label`` (default: the path) names it in errors."""
    name = str(path) if label is None else label
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise InputDataError(f"{name}: no such file") from e
    except IsADirectoryError as e:
        raise InputDataError(f"{name}: is a folder; expected a file") from e
    except UnicodeDecodeError as e:
        raise InputDataError(f"{name}: not UTF-8 text ({e.reason} at byte {e.start})") from e
