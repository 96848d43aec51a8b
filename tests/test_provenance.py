"""The embedding provenance survey, read from the documents; a mixed space refuses (exit 3)."""

from __future__ import annotations

import pytest

from harness.errors import EXIT_REFUSED, RefusedError
from harness.index.provenance import refuse_mixed, survey

CASES = [
    ([], "empty", {}, 0),
    (["neural", None, ""], "unattributed", {}, 3),
    (["m1@a", "m1@a"], "uniform", {"m1@a": 2}, 0),
    (["m1@a", "neural"], "partially_unattributed", {"m1@a": 1}, 1),
    (["m1@a", "m2@b", "m1@a"], "mixed", {"m1@a": 2, "m2@b": 1}, 0),
]


@pytest.mark.parametrize(("models", "verdict", "counts", "unattributed"), CASES)
def test_verdicts(models: list[str | None], verdict: str, counts: dict[str, int], unattributed: int) -> None:
    block = survey(models, dimension=384, configured="m1@a")
    assert block["embedding_verdict"] == verdict
    assert block["embedding_models"] == counts
    assert block["embedding_unattributed"] == unattributed
    assert block["configured_embedding_model"] == "m1@a"  # kept apart from what the documents say


def test_only_mixed_is_refused() -> None:
    for models, verdict, _, _ in CASES:
        block = survey(models, dimension=384, configured=None)
        if verdict == "mixed":
            with pytest.raises(RefusedError) as e:
                refuse_mixed(block)
            assert e.value.exit_code == EXIT_REFUSED
        else:
            refuse_mixed(block)
