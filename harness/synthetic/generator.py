"""The generator: seed -> the bytes of a corpus folder. No language model, no I/O here.

``generate(seed, n_meetings)`` returns ``{relative path: bytes}`` for every file of the
native format except the self-report (which is measured on the written corpus). Gold sets
and answers are computed *by construction*, from the plan and the rendered turns; the
validator later re-derives every one of them from the written text.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.model import file_uuid_for
from harness.synthetic import blocks as blk
from harness.synthetic import queries as qt
from harness.synthetic.archive import date_label, series_things, shared_topics, sibling_lookups
from harness.synthetic.filler import FillerWriter
from harness.synthetic.formats import (
    CORPUS_NAME,
    DATE_FIRST,
    DATE_LAST,
    FORMAT,
    GENERATOR,
    GENERATOR_VERSION,
    LICENCE,
    MANIFEST,
    PLANTS,
    QUERIES,
    RULE_COUNT_EVENTS,
    RULE_COUNT_FILES,
    RULE_LIST_FILES,
    RULE_SPEAKER_TOP,
    RULE_TEMPORAL,
    RULES,
    TIER,
    canonical_json,
    meeting_path,
    query_counts,
    sha256_bytes,
)
from harness.synthetic.planting import LookupPlan, MarkerPlan, Plan, TopicPlan, build_plan
from harness.synthetic.regime import DEFAULT_REGIME, Regime, regime_named, regime_record
from harness.synthetic.render import RenderedMeeting, render
from harness.synthetic.seeds import rng_for
from harness.synthetic.skeleton import MeetingPlan, Skeleton, build_skeleton

RULE_SHORT = {rule: rule.split("-")[0] for rule in RULES}


@dataclass(frozen=True)
class _MeetingWork:
    lookups: list[LookupPlan]
    subjects: list[str]
    topics: list[tuple[TopicPlan, str]]
    markers: list[tuple[MarkerPlan, int, bool]]


def generate(seed: int, n_meetings: int, regime: Regime | str = DEFAULT_REGIME) -> dict[str, bytes]:
    """Every file of a fresh corpus (paths relative to its folder), self-report excepted."""
    regime = regime_named(regime) if isinstance(regime, str) else regime
    skeleton = build_skeleton(seed, n_meetings)
    plan = build_plan(skeleton, sibling_lookups if regime.sibling_facts else None,
                      shared_topics if regime.shared_topics else None)
    rendered = _render_all(skeleton, plan, regime)
    uuid = {m.meeting_id: file_uuid_for(CORPUS_NAME, m.meeting_id) for m in skeleton.meetings}

    files: dict[str, bytes] = {}
    for m in skeleton.meetings:
        files[meeting_path(m.meeting_id)] = canonical_json(_meeting_record(m, rendered[m.meeting_id], uuid))
    query_records = _queries(skeleton, plan, rendered, uuid, regime)
    plant_records = _plants(rendered, plan)
    files[QUERIES] = canonical_json({"queries": query_records}, indent=1)
    files[PLANTS] = canonical_json({"plants": plant_records}, indent=1)
    record = None if regime.is_easy else regime_record(regime)
    files[MANIFEST] = canonical_json(build_manifest(seed, len(skeleton.meetings), query_records, files, None,
                                                    record), indent=1)
    return files


def build_manifest(
    seed: int, n_meetings: int, queries: list[dict[str, Any]], files: dict[str, bytes],
    selection: dict[str, Any] | None, regime: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """corpus.json; ``regime`` is left out for the easy regime, whose bytes predate regimes."""
    extra = {} if regime is None else {"regime": regime}
    return {
        **extra,
        "corpus": CORPUS_NAME,
        "date_range": [DATE_FIRST.isoformat(), DATE_LAST.isoformat()],
        "files": {path: sha256_bytes(data) for path, data in sorted(files.items()) if path != MANIFEST},
        "format": FORMAT,
        "generator": GENERATOR,
        "generator_version": GENERATOR_VERSION,
        "licence": LICENCE,
        "meetings": n_meetings,
        "queries": query_counts(queries),
        "seed": seed,
        "selection": selection,
        "tier": TIER,
    }


# --------------------------------------------------------------------------- rendering


def _render_all(skeleton: Skeleton, plan: Plan, regime: Regime) -> dict[str, RenderedMeeting]:
    work: dict[str, _MeetingWork] = {m.meeting_id: _MeetingWork([], [], [], []) for m in skeleton.meetings}
    for lp in plan.lookups:
        work[lp.meeting_id].lookups.append(lp)
        for other in lp.distractors:
            work[other].subjects.append(lp.subject)
    for tp in plan.topics:
        for meeting_id, conclusion in zip(tp.meeting_ids, tp.conclusions, strict=True):
            work[meeting_id].topics.append((tp, conclusion))
    for mp in plan.markers:
        for meeting_id, n_turns in mp.mentions:
            work[meeting_id].markers.append((mp, n_turns, meeting_id == mp.double_turn))

    first = skeleton.first_name()
    leads = {s.index: s.lead for s in skeleton.series}
    out: dict[str, RenderedMeeting] = {}
    for m in skeleton.meetings:
        rng = rng_for(skeleton.seed, "meeting", m.meeting_id)
        things = series_things(skeleton.seed, m.team, m.kind) if regime.series_vocabulary else None
        writer = FillerWriter(rng, m.kind, m.team, [first[a] for a in m.attendees], things)
        w = work[m.meeting_id]
        planted: list[list[blk.LTurn]] = []
        for lp in w.lookups:
            planted.append(blk.lookup_block(rng, writer, lp, first, m.attendees))
        for subject in sorted(w.subjects):
            planted.append(blk.subject_block(rng, subject, m.attendees))
        for tp, conclusion in sorted(w.topics, key=lambda t: t[0].topic):
            extra = rng.randint(*regime.topic_discussion) if regime.topic_discussion else 0
            planted.append(blk.topic_block(rng, writer, tp, conclusion, first, m.attendees, extra))
        for mp, n_turns, double in sorted(w.markers, key=lambda t: t[0].key):
            planted.extend(blk.marker_blocks(rng, writer, mp, n_turns, double, first, m.attendees))
        out[m.meeting_id] = render(
            skeleton.seed, m.meeting_id, m.attendees, leads[m.series_index], writer, first, planted, rng,
            regime.filler_turns,
        )
    return out


def _meeting_record(m: MeetingPlan, r: RenderedMeeting, uuid: dict[str, str]) -> dict[str, Any]:
    return {
        "file_uuid": uuid[m.meeting_id],
        "kind": m.kind,
        "meeting_id": m.meeting_id,
        "recorded_date": m.recorded_date.isoformat(),
        "roster": list(r.roster),
        "series_number": m.series_number,
        "team": m.team,
        "title": m.title,
        "turns": [
            {"end": t.end / 100, "speaker": t.speaker, "start": t.start / 100, "text": t.text} for t in r.turns
        ],
    }


# --------------------------------------------------------------------------- queries


def _query(
    qid: str, query_class: str, text: str, template: str, *, gold: list[dict[str, Any]] | None = None,
    rule: str | None = None, answer: Any = None, closure: list[str], cues: bool = False, **keys: Any,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "answer": answer,
        "closure": sorted(closure),
        "gold": gold or [],
        "id": qid,
        "query_class": query_class,
        "rule": rule,
        "scored_on": "answer" if rule else "rank",
        "template": template,
        "text": text,
    }
    for key in ("fact", "kind", "month", "phrase", "speaker", "team", "verb"):
        record[key] = keys.get(key)
    if cues:  # the archive regime's cue keys (an easy corpus keeps the bytes it had before regimes)
        for key in ("attendees", "date"):
            record[key] = keys.get(key)
    return record


def _roster_pair(rng: Any, lp: LookupPlan, rosters: dict[str, tuple[str, ...]], siblings: list[str]) -> Any:
    """Two people at the gold session and together at no other session stating the item."""
    gold = rosters[lp.meeting_id]
    pairs = [(a, b) for i, a in enumerate(gold) for b in gold[i + 1:]
             if lp.value not in (a, b)
             and not any(a in rosters[o] and b in rosters[o] for o in siblings if o != lp.meeting_id)]
    return pairs[rng.randrange(len(pairs))] if pairs else None


def _lookup_queries(skeleton: Skeleton, plan: Plan, rendered: dict[str, RenderedMeeting],
                    regime: Regime) -> list[dict[str, Any]]:
    seed = skeleton.seed
    by_id = {m.meeting_id: m for m in skeleton.meetings}
    stating: dict[str, set[str]] = defaultdict(set)  # item -> the sessions that state a value for it
    for lp in plan.lookups:
        stating[lp.subject].add(lp.meeting_id)
    rosters = {meeting_id: r.roster for meeting_id, r in rendered.items()}
    out: list[dict[str, Any]] = []
    for n, lp in enumerate(sorted(plan.lookups, key=lambda p: (p.meeting_id, p.slot)), start=1):
        m = by_id[lp.meeting_id]
        start, end = rendered[lp.meeting_id].spans()[f"lookup:{lp.meeting_id}:{lp.slot}"]
        siblings = sorted(stating[lp.subject])
        rng = rng_for(seed, "q-lookup", lp.meeting_id, lp.slot)
        cue_keys: dict[str, Any] = {}
        if len(siblings) > 1:
            pair = _roster_pair(rng, lp, rosters, siblings) if rng.randint(1, 100) <= 40 else None
            cue = "roster" if pair else "date"
            text, template = qt.archive_lookup_text(rng, lp.fact_type, lp.subject, lp.speaker, m.team, m.kind,
                                                    cue, date_label(m), pair)
            cue_keys = {"attendees": sorted(pair)} if pair else {"date": m.recorded_date.isoformat()}
        else:
            text, template = qt.lookup_text(rng, lp.fact_type, lp.subject, lp.speaker, m.team, m.kind)
        gold = [{"end_turn": end, "meeting_id": lp.meeting_id, "start_turn": start}]
        out.append(_query(f"lookup-{n:05d}", "lookup", text, template, gold=gold, closure=siblings,
                          cues=not regime.is_easy, phrase=lp.subject, fact=lp.fact, speaker=lp.speaker,
                          team=m.team, kind=m.kind, **cue_keys))
    return out


def _queries(
    skeleton: Skeleton, plan: Plan, rendered: dict[str, RenderedMeeting], uuid: dict[str, str], regime: Regime
) -> list[dict[str, Any]]:
    seed = skeleton.seed
    by_id = {m.meeting_id: m for m in skeleton.meetings}
    cues = not regime.is_easy
    out = _lookup_queries(skeleton, plan, rendered, regime)

    series = {s.index: s for s in skeleton.series}
    discussing: dict[str, set[str]] = defaultdict(set)  # topic -> every session discussing it, any series
    for tp in plan.topics:
        discussing[tp.topic].update(tp.meeting_ids)
    for n, tp in enumerate(sorted(plan.topics, key=lambda p: (p.meeting_ids[0], p.topic)), start=1):
        s = series[tp.series_index]
        gold = []
        for meeting_id in tp.meeting_ids:
            start, end = rendered[meeting_id].spans()[f"topic:{tp.topic}"]
            gold.append({"end_turn": end, "meeting_id": meeting_id, "start_turn": start})
        text, template = qt.multi_file_text(rng_for(seed, "q-multi", tp.topic, *((s.team, s.kind) if cues else ())),
                                            tp.topic, s.team, s.kind, tp.person, series_cued=cues)
        out.append(_query(f"multi-{n:05d}", "multi_file", text, template, gold=gold,
                          closure=sorted(discussing[tp.topic]), cues=cues,
                          phrase=tp.topic, team=s.team, kind=s.kind, speaker=tp.person))

    counters: dict[str, int] = defaultdict(int)
    for mp in sorted(plan.markers, key=lambda p: (p.rule, p.key)):
        counters[mp.rule] += 1
        qid = f"agg-{RULE_SHORT[mp.rule]}-{counters[mp.rule]:04d}"
        files = [meeting_id for meeting_id, _ in mp.mentions]
        verb = mp.verb[0] if mp.verb else None
        text, template = qt.aggregation_text(rng_for(seed, "q-agg", mp.key, mp.phrase), mp.rule,
                                             phrase=mp.phrase, verb=verb, month=mp.month)
        out.append(_query(qid, "aggregation", text, template, rule=mp.rule, answer=_marker_answer(mp, by_id, uuid),
                          closure=files, cues=cues, phrase=mp.phrase, verb=verb, month=mp.month))

    for n, st in enumerate(sorted(plan.speaker_tops, key=lambda p: p.series_index), start=1):
        s = series[st.series_index]
        text, template = qt.aggregation_text(rng_for(seed, "q-r6", s.team, s.kind), RULE_SPEAKER_TOP,
                                             team=s.team, kind=s.kind)
        answer = {"count": len(s.meeting_ids), "name": s.lead}
        out.append(_query(f"agg-R6-{n:04d}", "aggregation", text, template, rule=RULE_SPEAKER_TOP, answer=answer,
                          closure=list(s.meeting_ids), cues=cues, team=s.team, kind=s.kind))
    out.sort(key=lambda q: q["id"])
    return out


# rule -> its answer by construction, from the plan (the validator recomputes it from the text)
_ANSWER_BY_CONSTRUCTION: dict[str, Callable[[MarkerPlan, dict[str, MeetingPlan], dict[str, str]], Any]] = {
    RULE_COUNT_FILES: lambda mp, by_id, uuid: len(mp.mentions),
    RULE_LIST_FILES: lambda mp, by_id, uuid: sorted(uuid[f] for f, _ in mp.mentions),
    RULE_COUNT_EVENTS: lambda mp, by_id, uuid: sum(n for _, n in mp.mentions) + (1 if mp.double_turn else 0),
    RULE_TEMPORAL: lambda mp, by_id, uuid: sum(
        1 for f, _ in mp.mentions if by_id[f].recorded_date.strftime("%Y-%m") == mp.month
    ),
}


def _marker_answer(mp: MarkerPlan, by_id: dict[str, MeetingPlan], uuid: dict[str, str]) -> Any:
    return _ANSWER_BY_CONSTRUCTION[mp.rule](mp, by_id, uuid)


# --------------------------------------------------------------------------- plants


def _plants(rendered: dict[str, RenderedMeeting], plan: Plan) -> list[dict[str, Any]]:
    """Every planted phrase with the (meeting, turn, count) it was written into."""
    roles: dict[str, str] = {}
    for lp in plan.lookups:
        roles[lp.fact] = "fact"
        roles[lp.subject] = "subject"
    for tp in plan.topics:
        roles[tp.topic] = "topic"
    for mp in plan.markers:
        roles[mp.phrase] = "marker"
    mentions: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for meeting_id in sorted(rendered):
        for phrase, places in rendered[meeting_id].mentions().items():
            for turn, count in places:
                mentions[phrase].append({"count": count, "meeting_id": meeting_id, "turn": turn})
    out: list[dict[str, Any]] = []
    counters: dict[str, int] = defaultdict(int)
    for phrase in sorted(mentions, key=lambda p: (roles[p], p)):
        counters[roles[phrase]] += 1
        records = sorted(mentions[phrase], key=lambda x: (x["meeting_id"], x["turn"]))
        out.append({"id": f"{roles[phrase]}-{counters[roles[phrase]]:05d}", "mentions": records,
                    "phrase": phrase, "role": roles[phrase]})
    return out
