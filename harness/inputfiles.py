"""Reading a file the user named: every way it can be unreadable is one line naming it.

A missing file, a folder where a file belongs, or bytes that are not UTF-8 are invalid
input (exit 4), not an internal error. So is JSON that does not parse, or that does not
fit the model of the stage that wrote it (:func:`validate_input` reports the first problem,
naming the field). Shared by every stage, like :mod:`harness.errors`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from harness.errors import InputDataError

M = TypeVar("M", bound=BaseModel)


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


def parse_json_input(text: str, where: str) -> Any:
    """JSON text read from ``where``; malformed JSON is one line naming the file and line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputDataError(f"{where}:{e.lineno}: not JSON ({e.msg})") from e


def _field(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(top level)"


def validate_input(model: type[M], doc: Any, where: str) -> M:
    """``doc`` (parsed JSON from ``where``) as ``model``: the first problem is one line naming the field."""
    try:
        return model.model_validate(doc)
    except PydanticValidationError as e:
        first = e.errors()[0]
        field = _field(tuple(first["loc"]))
        if first["type"] == "missing":
            raise InputDataError(f"{where}: {field} is missing") from e
        raise InputDataError(f"{where}: {field}: {first['msg']}") from e
