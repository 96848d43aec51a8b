"""Reading a file the user named: every way it can be unreadable is one line naming it.

A missing file, a folder where a file belongs, or bytes that are not UTF-8 are invalid
input (exit 4), not an internal error. So is JSON that does not parse, or that does not
fit the model of the stage that wrote it (:func:`validate_input` reports the first problem,
naming the field). :func:`read_json_input` reads a JSON file a user hands in, bounded: at most
``MAX_JSON_CHARS`` characters, nested at most ``MAX_JSON_DEPTH`` levels (checked by a scan, not by
recursion, before parsing). :func:`iter_input_line_blocks` streams a line-oriented file (a million-line
TREC run) with the same refusals, never holding it whole, and refuses control characters.
Shared by every stage, like :mod:`harness.errors`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from harness.errors import InputDataError

M = TypeVar("M", bound=BaseModel)


# A JSON document a user hands in is one the harness writes: a manifest of about 60 arms, a state's
# state.json, a metrics.json; a few levels deep and a few MB. Far past both, it is not one of them.
MAX_JSON_DEPTH = 100
MAX_JSON_CHARS = 64 << 20  # characters read whole (64 Mi)


def read_input_text(path: Path, label: str | None = None, max_chars: int | None = None) -> str:
    """The UTF-8 text of ``path``; ``label`` (default: the path) names it in errors. With ``max_chars``,
    a file longer than that is refused after reading one character more (``/dev/zero`` too)."""
    name = str(path) if label is None else label
    try:
        if max_chars is None:
            return Path(path).read_text(encoding="utf-8")
        with Path(path).open(encoding="utf-8") as handle:
            text = handle.read(max_chars + 1)
        if len(text) > max_chars:
            raise InputDataError(f"{name}: more than {max_chars} characters; expected the document the harness "
                                 "writes (a few MB at most)")
        return text
    except FileNotFoundError as e:
        raise InputDataError(f"{name}: no such file") from e
    except IsADirectoryError as e:
        raise InputDataError(f"{name}: is a folder; expected a file") from e
    except UnicodeDecodeError as e:
        raise InputDataError(f"{name}: not UTF-8 text ({e.reason} at byte {e.start})") from e


# Unicode control characters (category Cc) except tab and line feed, searched for once every \r\n
# is \n: a carriage return still there did not end a line.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
BLOCK_CHARS = 1 << 22  # characters read at a time (a few MB): a block's lines are the only list held
# The longest line read, in characters without its break: a TREC line is six short fields, and a
# line is held whole before it is split, so a file with no line break (``/dev/zero``, a binary
# named by mistake) is refused here instead of being read without bound.
MAX_LINE_CHARS = 65_536


def iter_input_line_blocks(path: Path, label: str | None = None,
                           block_chars: int | None = None) -> Iterator[tuple[int, list[str]]]:
    """The lines of ``path`` in blocks: ``(number of the block's first line, its lines)``.

    Streams (a million-line file is never held whole, nor a list of all its lines) while the
    checks run over a block at a time in C, so a caller's per-line loop is all the Python there
    is. Lines break at ``\\n`` only, ``\\r\\n`` counting as one, so the numbers are the ones an
    editor shows; lines come without their breaks. A UTF-8 byte-order mark at the start is dropped.
    Refused, one line each: :func:`read_input_text`'s errors, a control character other than
    tab anywhere (a NUL, a form feed, a lone ``\\r``), named by ``file:line:column``, and a line
    longer than :data:`MAX_LINE_CHARS`, named by ``file:line``. Both are found in the partial
    line carried between blocks too, so memory stays within a block and one line at most.
    """
    name = str(path) if label is None else label
    try:
        with Path(path).open(encoding="utf-8-sig", newline="") as handle:
            yield from _line_blocks(handle, name, block_chars or BLOCK_CHARS)
    except FileNotFoundError as e:
        raise InputDataError(f"{name}: no such file") from e
    except IsADirectoryError as e:
        raise InputDataError(f"{name}: is a folder; expected a file") from e
    except UnicodeDecodeError:
        read_input_text(path, label)  # raises, naming the offset in the whole file
        raise


def _line_blocks(handle: TextIO, name: str, block_chars: int) -> Iterator[tuple[int, list[str]]]:
    first, carry = 1, ""
    while True:
        chunk = handle.read(block_chars)
        text = carry + chunk
        cut = len(text) if not chunk else text.rfind("\n") + 1
        text, carry = text[:cut], text[cut:]
        if "\r" in text:
            text = text.replace("\r\n", "\n")  # at line ends only: line numbers and columns keep
        _refuse_control(text, first, name)
        lines = text.split("\n")
        if chunk:
            lines.pop()  # the empty string after the block's last break
        if len(text) > MAX_LINE_CHARS:
            _refuse_long(lines, first, name)
        if carry:  # the start of a line the next block ends: checked now, so it cannot grow unchecked
            _refuse_partial(carry, first + len(lines), name)
        if not chunk:
            if text:
                yield first, lines
            return
        if lines:
            yield first, lines
            first += len(lines)


def _refuse_control(text: str, first: int, name: str) -> None:
    match = _CONTROL.search(text)
    if match is None:
        return
    at = match.start()
    line = first + text.count("\n", 0, at)
    column = at - text.rfind("\n", 0, at)
    raise InputDataError(f"{name}:{line}: control character U+{ord(match.group()):04X} at column {column}; "
                         "expected printable text, fields separated by spaces or tabs, lines ending \\n or \\r\\n")


def _too_long(name: str, line: int) -> InputDataError:
    return InputDataError(f"{name}:{line}: line longer than {MAX_LINE_CHARS:,} characters, the longest read; "
                          "expected one record per line, lines ending \\n or \\r\\n")


def _refuse_long(lines: list[str], first: int, name: str) -> None:
    lengths = list(map(len, lines))
    if max(lengths, default=0) > MAX_LINE_CHARS:
        raise _too_long(name, first + next(i for i, n in enumerate(lengths) if n > MAX_LINE_CHARS))


def _refuse_partial(carry: str, line: int, name: str) -> None:
    # a \r that ends the carry may be the first half of a \r\n the next block completes
    _refuse_control(carry[:-1] if carry[-1] == "\r" else carry, line, name)
    if len(carry) > MAX_LINE_CHARS + 1:  # + 1: that \r
        raise _too_long(name, line)


# A JSON string (its closing quote optional, so an unterminated one ends the text): possessive, so
# the scan is linear whatever the quotes and backslashes.
_JSON_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_BRACKET_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # +1, +1, -1, -1 as int8
_DEPTH_BLOCK = 1 << 20


def nested_deeper_than(text: str, limit: int) -> bool:
    """Whether the arrays and objects of JSON ``text`` nest more than ``limit`` levels, scanned without
    recursion: the brackets outside strings, counted in C a block at a time (a million levels in a
    fraction of a second, memory a few MB whatever the size)."""
    if text.count("[") + text.count("{") <= limit:
        return False  # the common case: too few brackets to nest that deep, no scan
    import numpy as np  # only for a document with many brackets

    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text)).encode("ascii")
    depth = 0
    for lo in range(0, len(brackets), _DEPTH_BLOCK):
        steps = np.frombuffer(brackets[lo:lo + _DEPTH_BLOCK].translate(_BRACKET_STEPS), dtype=np.int8)
        levels = np.cumsum(steps, dtype=np.int64)
        if depth + int(levels.max()) > limit:
            return True
        depth += int(levels[-1])
    return False


def parse_json_input(text: str, where: str) -> Any:
    """JSON text read from ``where``; malformed JSON, or JSON nested deeper than ``MAX_JSON_DEPTH``,
    is one line naming the file (and the line)."""
    if nested_deeper_than(text, MAX_JSON_DEPTH):
        raise InputDataError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels; expected the document "
                             "the harness writes (a few levels)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputDataError(f"{where}:{e.lineno}: not JSON ({e.msg})") from e


def read_json_input(path: Path, label: str | None = None) -> Any:
    """The JSON document in ``path``, read bounded: at most ``MAX_JSON_CHARS`` characters, nested at most
    ``MAX_JSON_DEPTH`` levels; every refusal one line naming the file (InputDataError, exit 4)."""
    name = str(path) if label is None else label
    return parse_json_input(read_input_text(path, name, max_chars=MAX_JSON_CHARS), name)


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
