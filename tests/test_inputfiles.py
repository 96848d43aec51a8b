"""harness.inputfiles: the streaming line reader gives the lines an editor shows, whatever the block size."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import InputDataError
from harness.inputfiles import iter_input_line_blocks, read_input_text

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
