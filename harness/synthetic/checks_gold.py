"""Validator checks that re-derive the gold from the written text: lookup and multi-file spans,
aggregation answers, planted markers and the wording of every query.

Each ``check_*`` takes the :class:`~harness.synthetic.checkkit.Context` and adds what it finds to
the :class:`~harness.synthetic.checkkit.Problems`; docs/synthetic.md describes each check.
"""

from __future__ import annotations

import re
from collections import Counter

from harness.synthetic.answers import recompute
from harness.synthetic.checkkit import Context, Problems
from harness.synthetic.formats import (
    CLASSES,
    PLANT_ROLES,
    PLANTS,
    RULE_COUNT_EVENTS,
    RULE_SPEAKER_TOP,
    RULE_TEMPORAL,
    RULES,
    NativeQuery,
)
from harness.synthetic.queries import (
    AGGREGATION_TEMPLATES,
    ARCHIVE_LOOKUP_ASKS,
    ARCHIVE_LOOKUP_CUES,
    LOOKUP_TEMPLATES,
    MULTI_FILE_TEMPLATES,
    day_label,
    month_label,
)
from harness.synthetic.textscan import codename_turns, count_in


def _stating_sessions(ctx: Context) -> dict[str, set[str]]:
    """Item -> every file where a lookup's fact about it is said (re-derived from the text)."""
    out: dict[str, set[str]] = {}
    for q in ctx.corpus.queries:
        if q.query_class == "lookup" and q.phrase and q.fact:
            out.setdefault(q.phrase, set()).update(ctx.occ.files(q.fact))
    return out


def _names_series(text: str, team: str | None, kind: str | None) -> bool:
    return bool(team and kind and team.lower() in text.lower() and kind in text)


def _lookup_cue_problem(ctx: Context, q: NativeQuery, siblings: list[str]) -> str | None:
    """With the item stated in several sessions, the question must tell its session apart."""
    gold = ctx.meetings[q.gold[0].meeting_id]
    if not _names_series(q.text, gold.team, gold.kind):
        return f"the item is stated in {len(siblings)} sessions and the question does not name the gold's series"
    others = [ctx.meetings[o] for o in siblings if o != gold.meeting_id]
    if q.date:
        if q.date != gold.recorded_date or day_label(q.date) not in q.text:
            return f"the question's date {q.date!r} is not the gold session's {gold.recorded_date!r}, verbatim"
        same = [o.meeting_id for o in others if o.recorded_date == q.date]
    elif q.attendees:
        if not all(a in q.text and a in gold.roster for a in q.attendees):
            return f"the question's attendees {list(q.attendees)} are not named in it, or not at the gold session"
        same = [o.meeting_id for o in others if all(a in o.roster for a in q.attendees)]
    else:
        return f"the item is stated in {len(siblings)} sessions ({', '.join(siblings)}) and the question " \
               "names no date or attendees to tell them apart"
    if same:
        return f"the question's cue also fits {', '.join(same)}, which states the item too"
    return None


def check_lookup_gold(ctx: Context, p: Problems) -> None:
    stating = _stating_sessions(ctx)
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
        siblings = sorted(stating.get(q.phrase or "", ()))
        if list(q.closure) != siblings:
            p.add(f"{q.id}: closure {list(q.closure)} is not the sessions that state the item {siblings}")
            continue
        problem = _lookup_cue_problem(ctx, q, siblings) if len(siblings) > 1 else None
        if problem:
            p.add(f"{q.id}: {problem}")


def check_multi_file_gold(ctx: Context, p: Problems) -> None:
    for q in ctx.corpus.queries:
        if q.query_class != "multi_file":
            continue
        p.checked += 1
        problem = _multi_file_problem(ctx, q)
        if problem:
            p.add(f"{q.id}: {problem}")


def _multi_file_problem(ctx: Context, q: NativeQuery) -> str | None:
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
    # the question's cue: the series (team and kind) and/or a person, where the question names them
    by_series = _names_series(q.text, q.team, q.kind)
    by_person = bool(q.speaker and q.speaker in q.text)
    cued = [f for f in found
            if (not by_series or (ctx.meetings[f].team, ctx.meetings[f].kind) == (q.team, q.kind))
            and (not by_person or q.speaker in ctx.meetings[f].roster)]
    if cued != sorted(gold_files):
        cue = " and ".join(c for c, on in (("its series", by_series), ("its person", by_person)) if on) or "nothing"
        return f"the topic occurs in {found}; the question's cue ({cue}) selects {cued}, gold files are " \
               f"{sorted(gold_files)}"
    spans = {s.meeting_id: (s.start_turn, s.end_turn) for s in q.gold}
    for meeting_id, turn in sorted(ctx.occ.of(q.phrase)):
        if meeting_id not in spans:
            continue
        lo, hi = spans[meeting_id]
        if not lo <= turn <= hi:
            return f"the topic is mentioned at {meeting_id} turn {turn}, outside the gold span [{lo}, {hi}]"
    for meeting_id in gold_files:
        m = ctx.meetings[meeting_id]
        if (q.team and m.team != q.team) or (q.kind and m.kind != q.kind):
            return f"gold file {meeting_id} is {m.title!r}, not a {q.team} {q.kind} session"
        if q.speaker and q.speaker not in m.roster:
            return f"{q.speaker} does not attend gold file {meeting_id}"
    if list(q.closure) != found:
        return f"closure {list(q.closure)} is not every file that discusses the topic {found}"
    return None


def check_aggregation_answers(ctx: Context, p: Problems) -> None:
    for q in ctx.corpus.queries:
        if q.query_class != "aggregation":
            continue
        p.checked += 1
        problem = _aggregation_problem(ctx, q)
        if problem:
            p.add(f"{q.id} ({q.rule}): {problem}")


def _aggregation_problem(ctx: Context, q: NativeQuery) -> str | None:
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


def check_no_accidental_markers(ctx: Context, p: Problems) -> None:
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


def check_query_text(ctx: Context, p: Problems) -> None:
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
    for fact_type, asks in ARCHIVE_LOOKUP_ASKS.items():
        for cue, heads in ARCHIVE_LOOKUP_CUES.items():
            for c, head in enumerate(heads):
                for a, ask in enumerate(asks):
                    known[f"lookup.archive.{fact_type}.{cue}.{c}.{a}"] = (f"{head}, {ask}",)
    for k, t in enumerate(MULTI_FILE_TEMPLATES):
        known[f"multi_file.{k}"] = (t,)
    for rule, ts in AGGREGATION_TEMPLATES.items():
        for k, t in enumerate(ts):
            known[f"aggregation.{rule}.{k}"] = (t,)
    return known


_KNOWN_TEMPLATES = _known_templates()


def _query_problem(ctx: Context, q: NativeQuery) -> str | None:
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
