"""The validator: ten named checks that re-derive every gold set from the written text.

A corpus that fails any check is not usable. :func:`validate` returns one
:class:`CheckResult` per check, in the order of :data:`CHECKS`; :func:`validate_or_raise`
raises :class:`harness.errors.ValidationError` (exit 7) naming the first failing check and
its first offending item. docs/synthetic.md describes each check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ValidationError
from harness.synthetic.checkkit import Context, Problems
from harness.synthetic.checks_gold import (
    check_aggregation_answers,
    check_lookup_gold,
    check_multi_file_gold,
    check_no_accidental_markers,
    check_query_text,
)
from harness.synthetic.checks_structure import (
    check_ids,
    check_manifest,
    check_rosters,
    check_titles_dates,
    check_turn_timings,
)
from harness.synthetic.formats import NativeCorpus, read_native


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    checked: int
    failures: int
    first_failure: str | None
    description: str

    def line(self) -> str:
        status = "ok  " if self.passed else "FAIL"
        tail = "" if self.passed else f" — {self.failures} problem(s); first: {self.first_failure}"
        return f"{status} {self.name:<22} {self.checked:>7} checked{tail}"


# --------------------------------------------------------------------------- registry

CheckFn = Callable[[Context, Problems], None]
CHECKS: dict[str, tuple[CheckFn, str]] = {
    "manifest": (check_manifest, "corpus.json names the format, lists every file with its sha256, counts match"),
    "ids": (check_ids, "meeting, file_uuid, title, query and plant ids unique; every reference resolves"),
    "titles_dates": (check_titles_dates, "titles are '{Team} — {kind} #{n}'; dates in range; #n follows date order"),
    "rosters": (check_rosters, "roster = speakers in order of first turn, at least three"),
    "turn_timings": (check_turn_timings, "ordered (start, end, speaker); nobody overlaps themselves; "
                     "shared start times and backchannels present"),
    "lookup_gold": (check_lookup_gold, "each fact occurs exactly once, inside its gold span, said by its speaker"),
    "multi_file_gold": (check_multi_file_gold, "each topic occurs in exactly its gold files, inside their spans"),
    "aggregation_answers": (check_aggregation_answers, "every answer and closure recomputed from the text matches"),
    "no_accidental_markers": (check_no_accidental_markers, "planted phrases occur exactly where recorded; "
                              "no codename word anywhere else"),
    "query_text": (check_query_text, "classes, rules and wording well formed; phrase present; answer not given away"),
}


def validate_corpus(corpus: NativeCorpus) -> list[CheckResult]:
    ctx = Context(corpus)
    results = []
    for name, (fn, description) in CHECKS.items():
        problems = Problems()
        try:
            fn(ctx, problems)
        except Exception as e:  # a check that cannot run has failed, and says why
            problems.add(f"the check could not run: {type(e).__name__}: {e}")
        results.append(CheckResult(name, problems.count == 0, problems.checked, problems.count,
                                   problems.first, description))
    return results


def validate(root: Path) -> list[CheckResult]:
    """Run every check on the corpus folder ``root``."""
    return validate_corpus(read_native(Path(root)))


def raise_for_results(root: Path, results: list[CheckResult]) -> list[CheckResult]:
    failed = [r for r in results if not r.passed]
    if failed:
        first = failed[0]
        others = f" (also failing: {', '.join(r.name for r in failed[1:])})" if failed[1:] else ""
        raise ValidationError(
            f"{root}: check {first.name} failed with {first.failures} problem(s); first: {first.first_failure}"
            f"{others}. The corpus is not usable: regenerate it with 'ragsweep synth generate'"
        )
    return results


def validate_or_raise(root: Path) -> list[CheckResult]:
    """:func:`validate`, raising ValidationError (exit 7) if any check fails."""
    return raise_for_results(Path(root), validate(root))


def summary(results: list[CheckResult]) -> dict[str, Any]:
    return {r.name: {"checked": r.checked, "failures": r.failures, "first_failure": r.first_failure,
                     "passed": r.passed} for r in results}

