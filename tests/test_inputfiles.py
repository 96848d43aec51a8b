"""harness.inputfiles: the streaming line reader gives the lines an editor shows, whatever the block size;
a JSON file a user hands in is read bounded (its size and nesting, issue 51)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from harness import inputfiles
from harness.errors import InputDataError
from harness.inputfiles import (
    MAX_JSON_DEPTH,
    iter_input_line_blocks,
    nested_deeper_than,
    read_input_text,
    read_json_input,
)

TEXTS = {
    "plain": "a b\nc d\n",
    "no final break": "a b\nc d",
    "crlf": "a b\r\nc d\r\n\r\ne f",
    "blank lines": "\n\n a \n\n",
    "multibyte": "é ü\n€ 😀 x\nñ\n",
    "tabs": "a\tb\t\tc\n",
    "empty": "",
    "one break": "\n",
}


def _numbered(path: Path, block_chars: int | None) -> list[tuple[int, str]]:
    return [(first + i, line) for first, lines in iter_input_line_blocks(path, block_chars=block_chars)
            for i, line in enumerate(lines)]


@pytest.mark.parametrize("block_chars", [1, 2, 3, 5, 8, None])
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_blocks_of_any_size_read_as_the_lines_an_editor_shows(name: str, block_chars: int | None,
                                                              tmp_path: Path) -> None:
    text = TEXTS[name]
    path = tmp_path / "f.txt"
    path.write_bytes(text.encode())
    expected = text.replace("\r\n", "\n").split("\n")
    if expected[-1] == "":
        expected.pop()  # a final break ends the last line; it does not start another
    assert _numbered(path, block_chars) == list(enumerate(expected, start=1))


def test_a_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes("\ufeffq1 0 d1 1\n".encode())
    assert _numbered(path, None) == [(1, "q1 0 d1 1")]


@pytest.mark.parametrize("block_chars", [1, 4, None])
def test_a_control_character_is_named_by_line_and_column(block_chars: int | None, tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"ok line\r\nsecond\r\nthi\x00rd\n")
    with pytest.raises(InputDataError) as refused:
        _numbered(path, block_chars)
    assert str(refused.value).startswith(f"{path}:3: control character U+0000 at column 4;")


def test_the_refusals_are_read_input_texts(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    latin = tmp_path / "latin1.txt"
    latin.write_bytes(b"ok\n" * 5 + b"caf\xe9\n")
    for path in (tmp_path / "missing.txt", folder, latin):
        with pytest.raises(InputDataError) as streamed:
            _numbered(path, 4)
        with pytest.raises(InputDataError) as whole:
            read_input_text(path)
        assert str(streamed.value) == str(whole.value)
    assert str(whole.value) == f"{latin}: not UTF-8 text (invalid continuation byte at byte 18)"


# --- JSON a user hands in: bounded ---------------------------------------------------------------

def _nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


NESTING = {  # text: nested deeper than 100 levels?
    "100 levels": (_nested(100), False),
    "101 levels": (_nested(101), True),
    "101 objects": ('{"a":' * 101 + "1" + "}" * 101, True),
    "objects and arrays": ('{"a":[' * 50 + '{"b":1}' + "]}" * 50, True),  # 101
    "wide, shallow": (json.dumps([[i] for i in range(5_000)]), False),
    "brackets in a string": (json.dumps(["[" * 500, "{" * 500]), False),
    "escaped quotes in a string": (json.dumps(['\\"' + "[" * 500]), False),
    "a string between levels": ("[" * 60 + json.dumps("]" * 100 + '\\"') + "," + _nested(41) + "]" * 60, True),
    "closers first": ("]" * 300 + "[" * 100, False),
    "an unterminated string": ('["' + "[" * 500, False),
}


@pytest.mark.parametrize("name", sorted(NESTING))
def test_nesting_is_counted_outside_strings(name: str) -> None:
    text, deeper = NESTING[name]
    assert nested_deeper_than(text, MAX_JSON_DEPTH) is deeper


def test_the_nesting_scan_is_linear_and_never_recurses() -> None:
    # before: json.loads raised RecursionError (an internal error, exit 1) on this, in every --manifest
    text = _nested(100_000)
    started = time.perf_counter()
    assert nested_deeper_than(text, MAX_JSON_DEPTH)
    assert nested_deeper_than('"' + '\\"' * 500_000 + _nested(200), MAX_JSON_DEPTH) is False  # all one string
    assert time.perf_counter() - started < 1.0


def test_read_json_input_refuses_deep_nesting_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(_nested(100_000))
    with pytest.raises(InputDataError) as refused:
        read_json_input(path)
    assert str(refused.value) == (f"{path}: JSON nested deeper than 100 levels; expected the document the harness "
                                  "writes (a few levels)")
    path.write_text(_nested(100))
    assert read_json_input(path) == json.loads(_nested(100))


def test_read_json_input_reads_at_most_its_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputfiles, "MAX_JSON_CHARS", 10)
    path = tmp_path / "m.json"
    path.write_text('["é", 12]\n')  # 10 characters, 11 bytes: the limit counts characters
    assert read_json_input(path) == ["é", 12]
    path.write_text('["é", 123]\n')
    with pytest.raises(InputDataError) as refused:
        read_json_input(path, "F")
    assert str(refused.value) == ("F: more than 10 characters; expected the document the harness writes "
                                  "(a few MB at most)")


def test_an_endless_file_is_refused_at_the_limit() -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    with pytest.raises(InputDataError, match=r"^/dev/zero: more than 67108864 characters"):
        read_json_input(Path("/dev/zero"))
