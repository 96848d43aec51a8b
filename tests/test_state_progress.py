"""State-build progress in a log (not a terminal): one line per tenth, so a pod's or CI's log
shows a long stage moving without a line per batch."""

from __future__ import annotations

import pytest

from harness.state.build import _progress


def test_a_log_gets_a_line_per_tenth_and_the_last(capsys: pytest.CaptureFixture[str]) -> None:
    for run in range(2):  # a second build's stage of the same name logs again from the start
        for done in range(0, 1001, 7):
            _progress("encoding", done, 1000)
        _progress("encoding", 1000, 1000)
        lines = capsys.readouterr().err.splitlines()
        assert [line.split()[-1] for line in lines] == \
            ["105/1000", "203/1000", "301/1000", "406/1000", "504/1000", "602/1000", "700/1000", "805/1000",
             "903/1000", "1000/1000"], run
        assert "\r" not in "".join(lines)
