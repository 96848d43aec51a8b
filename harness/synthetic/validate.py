"""The validator: ten named checks that re-derive every gold set from the written text.

A corpus that fails any check is not usable. :func:`validate` returns one
:class:`CheckResult` per check, in the order of :data:`CHECKS`; :func:`validate_or_raise`
raises :class:`harness.errors.ValidationError` (exit 7) naming the first failing check and
its first offending item. docs/synthetic.md describes each check.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from functools import cached_property
from itertools import pairwise
from pathlib import Path
from typing import Any

from harness.errors import ValidationError
from harness.model import file_uuid_for
from harness.synthetic import vocab
from harness.synthetic.answers import recompute
from harness.synthetic.formats import (
    CLASSES,
    CORPUS_NAME,
    FORMAT,
    LICENCE,
    MANIFEST,
    PLANT_ROLES,
    PLANTS,
    QUERIES,
    RULE_COUNT_EVENTS,
    RULE_SPEAKER_TOP,
    RULE_TEMPORAL,
    RULES,
    TIER,
    NativeCorpus,
    NativeMeeting,
    NativeQuery,
    query_counts,
    read_native,
)
from harness.synthetic.queries import AGGREGATION_TEMPLATES, LOOKUP_TEMPLATES, MULTI_FILE_TEMPLATES, month_label
from harness.synthetic.textscan import Occurrences, codename_turns, count_in, scan

MAX_LISTED = 20
BACKCHANNEL_MAX_WORDS = 3
_MEETING_ID = re.compile(r"^m[0-9]{5,}$")
_QUERY_ID = re.compile(r"^(lookup-[0-9]{5}|multi-[0-9]{5}|agg-R[3-7]-[0-9]{4})$")


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


class _Problems:
    def __init__(self) -> None:
        self.count = 0
        self.first: str | None = None
        self.checked = 0

    def add(self, message: str) -> None:
        self.count += 1
        if self.first is None:
            self.first = message


class _Context:
    def __init__(self, corpus: NativeCorpus) -> None:
        self.corpus = corpus
        self.meetings = corpus.meeting_by_id()

    @cached_property
    def occ(self) -> Occurrences:
        phrases: set[str] = {p.phrase for p in self.corpus.plants}
        for q in self.corpus.queries:
            phrases.update(x for x in (q.phrase, q.fact) if x)
        return scan(self.corpus.meetings, phrases)

    def span_ok(self, meeting_id: str, start: int, end: int) -> str | None:
        m = self.meetings.get(meeting_id)
        if m is None:
            return f"meeting {meeting_id} does not exist"
        if not 0 <= start <= end < len(m.turns):
            return f"span [{start}, {end}] is outside {meeting_id}'s {len(m.turns)} turns"
        return None


# --------------------------------------------------------------------------- the checks


def _check_manifest(ctx: _Context, p: _Problems) -> None:
    c = ctx.corpus
    man = c.manifest
    expected = {"format": FORMAT, "corpus": CORPUS_NAME, "tier": TIER, "licence": LICENCE}
    for key, value in expected.items():
        if getattr(man, key) != value:
            p.add(f"{MANIFEST}: {key} is {getattr(man, key)!r}, expected {value!r}")
    listed = dict(man.files)
    present = {*c.meeting_files, QUERIES, PLANTS}
    for rel in sorted(present - set(listed)):
        p.add(f"{rel} is present but not listed in {MANIFEST}")
    for rel in sorted(set(listed) - present):
        p.add(f"{rel} is listed in {MANIFEST} but missing")
    for rel in sorted(set(listed) & present):
        p.checked += 1
        if listed[rel] != c.file_sha256.get(rel):
            p.add(f"{rel}: sha256 {c.file_sha256.get(rel)} differs from the manifest's {listed[rel]}")
    if man.meetings != len(c.meetings):
        p.add(f"{MANIFEST} says {man.meetings} meetings, {len(c.meetings)} found")
    counted = query_counts([q.model_dump() for q in c.queries])
    if man.queries != counted:
        p.add(f"{MANIFEST} query counts {man.queries} differ from {QUERIES}: {counted}")
    try:
        first, last = (date.fromisoformat(d) for d in man.date_range)
        if first > last:
            p.add(f"{MANIFEST}: date_range {man.date_range} is reversed")
    except ValueError:
        p.add(f"{MANIFEST}: date_range {man.date_range} is not two ISO dates")


def _check_ids(ctx: _Context, p: _Problems) -> None:
    c = ctx.corpus
    for rel in c.meeting_files:
        stem = rel.rsplit("/", 1)[-1].removesuffix(".json")
        if stem not in ctx.meetings:
            p.add(f"{rel} holds a meeting whose id is not {stem}")
    for kind, ids in (
        ("meeting id", [m.meeting_id for m in c.meetings]),
        ("file_uuid", [m.file_uuid for m in c.meetings]),
        ("title", [m.title for m in c.meetings]),
        ("query id", [q.id for q in c.queries]),
        ("plant id", [pl.id for pl in c.plants]),
    ):
        p.checked += len(ids)
        for value, n in sorted(Counter(ids).items()):
            if n > 1:
                p.add(f"{kind} {value} occurs {n} times")
    for m in c.meetings:
        if not _MEETING_ID.match(m.meeting_id):
            p.add(f"meeting id {m.meeting_id!r} does not look like m00001")
        if m.file_uuid != file_uuid_for(CORPUS_NAME, m.meeting_id):
            p.add(f"{m.meeting_id}: file_uuid {m.file_uuid} is not file_uuid_for({CORPUS_NAME!r}, {m.meeting_id!r})")
    for q in c.queries:
        if not _QUERY_ID.match(q.id):
            p.add(f"query id {q.id!r} does not look like lookup-00001, multi-00001 or agg-R3-0001")
        for ref in [*q.closure, *(s.meeting_id for s in q.gold)]:
            if ref not in ctx.meetings:
                p.add(f"query {q.id} refers to meeting {ref}, which does not exist")
    for pl in c.plants:
        for mention in pl.mentions:
            host = ctx.meetings.get(mention.meeting_id)
            if host is None or not 0 <= mention.turn < len(host.turns):
                p.add(f"plant {pl.id} records a mention at {mention.meeting_id} turn {mention.turn}, "
                      "which does not exist")


def _check_titles_dates(ctx: _Context, p: _Problems) -> None:
    man = ctx.corpus.manifest
    first, last = (date.fromisoformat(d) for d in man.date_range)
    series: dict[tuple[str, str], list[tuple[int, date, str]]] = {}
    for m in ctx.corpus.meetings:
        p.checked += 1
        if m.team not in vocab.TEAMS or m.kind not in vocab.KINDS:
            p.add(f"{m.meeting_id}: unknown team {m.team!r} or kind {m.kind!r}")
        expected = f"{m.team} — {m.kind} #{m.series_number}"
        if m.title != expected or m.series_number < 1:
            p.add(f"{m.meeting_id}: title {m.title!r}, expected {expected!r}")
        try:
            day = date.fromisoformat(m.recorded_date)
        except ValueError:
            p.add(f"{m.meeting_id}: recorded_date {m.recorded_date!r} is not an ISO date")
            continue
        if day.isoformat() != m.recorded_date or not first <= day <= last:
            p.add(f"{m.meeting_id}: recorded_date {m.recorded_date} is outside "
                  f"{man.date_range[0]}..{man.date_range[1]}")
        series.setdefault((m.team, m.kind), []).append((m.series_number, day, m.meeting_id))
    for (team, kind), sessions in sorted(series.items()):
        sessions.sort()
        for (n1, d1, id1), (n2, d2, id2) in pairwise(sessions):
            if n1 == n2 or d1 >= d2:
                p.add(f"{team} — {kind}: #{n1} ({id1}, {d1}) and #{n2} ({id2}, {d2}) are not in date order")


def _check_rosters(ctx: _Context, p: _Problems) -> None:
    for m in ctx.corpus.meetings:
        p.checked += 1
        spoken: dict[str, None] = {}
        for t in m.turns:
            spoken.setdefault(t.speaker, None)
        if list(m.roster) != list(spoken):
            p.add(f"{m.meeting_id}: roster {list(m.roster)} is not the speakers in order of first turn {list(spoken)}")
        elif len(m.roster) < 3:
            p.add(f"{m.meeting_id}: roster has {len(m.roster)} people, expected at least 3")


def _check_turn_timings(ctx: _Context, p: _Problems) -> None:
    for m in ctx.corpus.meetings:
        p.checked += 1
        problem = _timing_problem(m)
        if problem:
            p.add(f"{m.meeting_id}: {problem}")


def _timing_problem(m: NativeMeeting) -> str | None:
    turns = m.turns
    if not turns:
        return "no turns"
    for i, t in enumerate(turns):
        if not t.text.strip() or not t.speaker.strip():
            return f"turn {i} has an empty text or speaker"
        if not 0 <= t.start < t.end:
            return f"turn {i} runs from {t.start} to {t.end}"
        if round(t.start, 2) != t.start or round(t.end, 2) != t.end:
            return f"turn {i} times {t.start}/{t.end} have more than two decimals"
    keys = [(t.start, t.end, t.speaker) for t in turns]
    for i in range(1, len(keys)):
        if keys[i] <= keys[i - 1]:
            return f"turns {i - 1} and {i} are not in (start, end, speaker) order"
    last_end: dict[str, tuple[float, int]] = {}
    for i, t in enumerate(turns):
        prev = last_end.get(t.speaker)
        if prev is not None and t.start < prev[0]:
            return (f"{t.speaker} overlaps themselves: turn {i} starts at {t.start} "
                    f"before turn {prev[1]} ends at {prev[0]}")
        last_end[t.speaker] = (max(t.end, prev[0]) if prev else t.end, i)
    if not any(a.start == b.start and a.speaker != b.speaker for a, b in pairwise(turns)):
        return "no two speakers share a start time"
    if not _has_backchannel(m):
        return f"no backchannel (a turn of at most {BACKCHANNEL_MAX_WORDS} words inside another speaker's turn)"
    return None


def _has_backchannel(m: NativeMeeting) -> bool:
    turns = m.turns
    for i, t in enumerate(turns):
        if len(t.text.split()) > BACKCHANNEL_MAX_WORDS:
            continue
        for j in range(i - 1, max(-1, i - 6), -1):
            host = turns[j]
            if host.speaker != t.speaker and host.start < t.start and t.end < host.end:
                return True
    return False


def _check_lookup_gold(ctx: _Context, p: _Problems) -> None:
    for q in ctx.corpus.queries:
        if q.query_class != "lookup":
            continue
        p.checked += 1
        if len(q.gold) != 1:
            p.add(f"{q.id}: {len(q.gold)} gold spans, expected exactly one")
            continue
        span = q.gold[0]
        bad = ctx.span_ok(span.meeting_id, span.start_turn, span.end_turn)
        if bad:
            p.add(f"{q.id}: {bad}")
            continue
        if not q.fact:
            p.add(f"{q.id}: no fact recorded")
            continue
        places = ctx.occ.of(q.fact)
        total = sum(places.values())
        if total != 1:
            where = ", ".join(f"{mid} turn {i}" for mid, i in sorted(places)) or "nowhere"
            p.add(f"{q.id}: the fact occurs {total} times ({where}), expected exactly once")
            continue
        (meeting_id, turn), _ = next(iter(places.items()))
        if meeting_id != span.meeting_id or not span.start_turn <= turn <= span.end_turn:
            p.add(f"{q.id}: the fact is at {meeting_id} turn {turn}, outside its gold span "
                  f"{span.meeting_id} [{span.start_turn}, {span.end_turn}]")
            continue
        said_by = ctx.meetings[meeting_id].turns[turn].speaker
        if said_by != q.speaker:
            p.add(f"{q.id}: the fact is said by {said_by}, the query records {q.speaker}")
        if list(q.closure) != [span.meeting_id]:
            p.add(f"{q.id}: closure {list(q.closure)} is not its gold file [{span.meeting_id}]")


def _check_multi_file_gold(ctx: _Context, p: _Problems) -> None:
    for q in ctx.corpus.queries:
        if q.query_class != "multi_file":
            continue
        p.checked += 1
        problem = _multi_file_problem(ctx, q)
        if problem:
            p.add(f"{q.id}: {problem}")


def _multi_file_problem(ctx: _Context, q: NativeQuery) -> str | None:
    gold_files = [s.meeting_id for s in q.gold]
    if len(gold_files) < 2 or len(set(gold_files)) != len(gold_files):
        return f"gold files {gold_files}: expected two or more distinct files"
    for s in q.gold:
        bad = ctx.span_ok(s.meeting_id, s.start_turn, s.end_turn)
        if bad:
            return bad
    if not q.phrase:
        return "no topic recorded"
    found = ctx.occ.files(q.phrase)
    if found != sorted(gold_files):
        return f"the topic occurs in {found}, gold files are {sorted(gold_files)}"
    spans = {s.meeting_id: (s.start_turn, s.end_turn) for s in q.gold}
    for meeting_id, turn in sorted(ctx.occ.of(q.phrase)):
        lo, hi = spans[meeting_id]
        if not lo <= turn <= hi:
            return f"the topic is mentioned at {meeting_id} turn {turn}, outside the gold span [{lo}, {hi}]"
    for meeting_id in gold_files:
        m = ctx.meetings[meeting_id]
        if (q.team and m.team != q.team) or (q.kind and m.kind != q.kind):
            return f"gold file {meeting_id} is {m.title!r}, not a {q.team} {q.kind} session"
        if q.speaker and q.speaker not in m.roster:
            return f"{q.speaker} does not attend gold file {meeting_id}"
    if sorted(q.closure) != sorted(gold_files) or list(q.closure) != sorted(q.closure):
        return f"closure {list(q.closure)} is not its sorted gold files"
    return None


def _check_aggregation_answers(ctx: _Context, p: _Problems) -> None:
    for q in ctx.corpus.queries:
        if q.query_class != "aggregation":
            continue
        p.checked += 1
        problem = _aggregation_problem(ctx, q)
        if problem:
            p.add(f"{q.id} ({q.rule}): {problem}")


def _aggregation_problem(ctx: _Context, q: NativeQuery) -> str | None:
    shape = _answer_shape_problem(q)
    if shape:
        return shape
    r = recompute(q, ctx.corpus.meetings, ctx.occ)
    if r.problem:
        return r.problem
    if r.answer != q.answer:
        return f"stored answer {q.answer!r}, recomputed from the text {r.answer!r}"
    if list(q.closure) != list(r.closure):
        return f"stored closure {list(q.closure)}, recomputed {list(r.closure)}"
    if q.rule == RULE_TEMPORAL and r.outside_period < 1:
        return "the phrase is not mentioned outside the month, so an unfiltered count would also be right"
    if q.rule == RULE_COUNT_EVENTS and q.phrase and max(ctx.occ.of(q.phrase).values(), default=0) < 2:
        return "no turn says the phrase twice"
    return None


def _answer_shape_problem(q: NativeQuery) -> str | None:
    a = q.answer
    if q.rule == RULE_SPEAKER_TOP:
        ok = isinstance(a, dict) and set(a) == {"name", "count"} and isinstance(a.get("name"), str) \
            and isinstance(a.get("count"), int) and not isinstance(a.get("count"), bool)
        return None if ok else f"answer {a!r} is not {{'name': str, 'count': int}}"
    if q.rule == RULES[1]:
        ok = isinstance(a, list) and all(isinstance(x, str) for x in a) and a == sorted(a)
        return None if ok else f"answer {a!r} is not a sorted list of file_uuids"
    if not isinstance(a, int) or isinstance(a, bool):
        return f"answer {a!r} is not an int"
    return None


def _check_no_accidental_markers(ctx: _Context, p: _Problems) -> None:
    recorded_turns: dict[tuple[str, int], set[str]] = {}
    plant_phrases = {pl.phrase for pl in ctx.corpus.plants}
    for pl in ctx.corpus.plants:
        p.checked += 1
        if pl.role not in PLANT_ROLES:
            p.add(f"plant {pl.id}: role {pl.role!r} is not one of {PLANT_ROLES}")
        recorded = {(m.meeting_id, m.turn): m.count for m in pl.mentions}
        found = ctx.occ.of(pl.phrase)
        for place in sorted(set(found) | set(recorded)):
            if place not in recorded:
                p.add(f"{pl.phrase!r} occurs by accident at {place[0]} turn {place[1]} ({found[place]}x)")
            elif found.get(place, 0) != recorded[place]:
                p.add(f"{pl.phrase!r} at {place[0]} turn {place[1]}: recorded {recorded[place]}x, "
                      f"the text says it {found.get(place, 0)}x")
        if pl.role == "marker":
            for (meeting_id, turn), n in sorted(found.items()):
                text = ctx.meetings[meeting_id].turns[turn].text
                if count_in(pl.phrase, text, exact_case=True) != n:
                    p.add(f"marker {pl.phrase!r} at {meeting_id} turn {turn} is not in its exact case")
            for place in recorded:
                recorded_turns.setdefault(place, set()).add(pl.phrase)
    for (meeting_id, turn), words in sorted(codename_turns(ctx.corpus.meetings).items()):
        markers = " ".join(recorded_turns.get((meeting_id, turn), ())).lower()
        stray = [w for w in words if w.lower() not in markers.split()]
        if stray:
            p.add(f"codename word {stray[0]!r} at {meeting_id} turn {turn} belongs to no marker planted there")
    for q in ctx.corpus.queries:
        for phrase in (q.phrase, q.fact):
            if phrase and phrase not in plant_phrases:
                p.add(f"{q.id}: {phrase!r} is not a planted phrase in {PLANTS}")


def _check_query_text(ctx: _Context, p: _Problems) -> None:
    templates: dict[str, set[str]] = {}
    for q in ctx.corpus.queries:
        p.checked += 1
        problem = _query_problem(ctx, q)
        if problem:
            p.add(f"{q.id}: {problem}")
        templates.setdefault(q.rule or q.query_class, set()).add(q.template)
    counts = Counter(q.rule or q.query_class for q in ctx.corpus.queries)
    for group, used in sorted(templates.items()):
        if counts[group] >= 12 and len(used) < 2:
            p.add(f"all {counts[group]} {group} queries use one wording ({sorted(used)[0]})")


def _known_templates() -> dict[str, tuple[str, ...]]:
    known: dict[str, tuple[str, ...]] = {}
    for fact_type, ts in LOOKUP_TEMPLATES.items():
        for k, t in enumerate(ts):
            known[f"lookup.{fact_type}.{k}"] = (t,)
    for k, t in enumerate(MULTI_FILE_TEMPLATES):
        known[f"multi_file.{k}"] = (t,)
    for rule, ts in AGGREGATION_TEMPLATES.items():
        for k, t in enumerate(ts):
            known[f"aggregation.{rule}.{k}"] = (t,)
    return known


_KNOWN_TEMPLATES = _known_templates()


def _query_problem(ctx: _Context, q: NativeQuery) -> str | None:
    if q.query_class not in CLASSES:
        return f"query_class {q.query_class!r} is not one of {CLASSES}"
    if q.query_class == "aggregation":
        if q.rule not in RULES or q.scored_on != "answer" or q.gold:
            return f"an aggregation query needs a rule in {RULES}, scored_on 'answer' and no gold spans"
    elif q.rule is not None or q.scored_on != "rank" or not q.gold or q.answer is not None:
        return "a rank-scored query needs gold spans, scored_on 'rank', and no rule or answer"
    text = q.text
    if not text.strip() or "{" in text or "}" in text or not text.rstrip().endswith(("?", ".")):
        return f"text {text!r} is empty, unfilled or unfinished"
    if q.template not in _KNOWN_TEMPLATES:
        return f"template {q.template!r} is not one of the generator's"
    if q.rule == RULE_SPEAKER_TOP:
        if not (q.team and q.kind and q.team in text and q.kind in text):
            return "the question does not name its team and kind"
        if isinstance(q.answer, dict) and str(q.answer.get("name", "")).lower() in text.lower():
            return "the question contains its answer"
        return None
    if not q.phrase or q.phrase not in text:
        return f"the question does not contain its phrase {q.phrase!r} verbatim"
    if q.fact and count_in(q.fact, text):
        return "the question contains the fact it asks for"
    if q.rule == RULE_COUNT_EVENTS and not (q.verb and f" {q.verb} " in text):
        return f"the question does not use its verb {q.verb!r}"
    if q.rule == RULE_TEMPORAL and not (q.month and month_label(q.month) in text):
        return f"the question does not name its month {q.month!r}"
    answers = q.answer if isinstance(q.answer, list) else [q.answer]
    for a in answers:
        if a is not None and not isinstance(a, dict) and re.search(rf"(?<!\w){re.escape(str(a))}(?!\w)", text):
            return f"the question contains its answer {a!r}"
    return None


# --------------------------------------------------------------------------- registry

CheckFn = Callable[[_Context, _Problems], None]
CHECKS: dict[str, tuple[CheckFn, str]] = {
    "manifest": (_check_manifest, "corpus.json names the format, lists every file with its sha256, counts match"),
    "ids": (_check_ids, "meeting, file_uuid, title, query and plant ids unique; every reference resolves"),
    "titles_dates": (_check_titles_dates, "titles are '{Team} — {kind} #{n}'; dates in range; #n follows date order"),
    "rosters": (_check_rosters, "roster = speakers in order of first turn, at least three"),
    "turn_timings": (_check_turn_timings, "ordered (start, end, speaker); nobody overlaps themselves; "
                     "shared start times and backchannels present"),
    "lookup_gold": (_check_lookup_gold, "each fact occurs exactly once, inside its gold span, said by its speaker"),
    "multi_file_gold": (_check_multi_file_gold, "each topic occurs in exactly its gold files, inside their spans"),
    "aggregation_answers": (_check_aggregation_answers, "every answer and closure recomputed from the text matches"),
    "no_accidental_markers": (_check_no_accidental_markers, "planted phrases occur exactly where recorded; "
                              "no codename word anywhere else"),
    "query_text": (_check_query_text, "classes, rules and wording well formed; phrase present; answer not given away"),
}


def validate_corpus(corpus: NativeCorpus) -> list[CheckResult]:
    ctx = _Context(corpus)
    results = []
    for name, (fn, description) in CHECKS.items():
        problems = _Problems()
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

