"""One meeting's turns: filler around planted blocks, then timings, overlaps and backchannels.

Times are integer centiseconds until written (as seconds with at most two decimals), so
no floating-point arithmetic can differ between machines. Timing rules:

* a turn lasts 0.30–0.42 s per word plus a short pause; about one in eight starts a
  little before the previous one ends (overlapping speech); nobody overlaps themselves;
* about 3% of turns get a *collision*: another attendee starts at exactly the same
  centisecond ("Sorry, go ahead."), so two speakers share a start time and the turn
  order needs its tie-break (start, end, speaker);
* long turns (5 s and more) get a *backchannel* ("Uh-huh.", "Right.") from someone else,
  wholly inside the long turn, a fifth of the time (more often for lookup facts).

Every meeting has at least one collision and one backchannel; the written order of turns
is (start, end, speaker).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from harness.synthetic import vocab
from harness.synthetic.blocks import LTurn
from harness.synthetic.filler import FillerWriter
from harness.synthetic.seeds import rng_for

COLLISION_PERCENT = 3
OVERLAP_PERCENT = 12
LONG_TURN_CS = 500


@dataclass(frozen=True)
class TimedTurn:
    start: int  # centiseconds
    end: int
    speaker: str
    text: str
    tag: str | None
    mentions: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class RenderedMeeting:
    turns: tuple[TimedTurn, ...]  # written order
    roster: tuple[str, ...]

    def spans(self) -> dict[str, tuple[int, int]]:
        """Gold tag -> inclusive (first, last) turn index."""
        out: dict[str, tuple[int, int]] = {}
        for i, turn in enumerate(self.turns):
            if turn.tag is not None:
                lo, hi = out.get(turn.tag, (i, i))
                out[turn.tag] = (min(lo, i), max(hi, i))
        return out

    def mentions(self) -> dict[str, list[tuple[int, int]]]:
        """Planted phrase -> [(turn index, occurrences)]."""
        out: dict[str, list[tuple[int, int]]] = {}
        for i, turn in enumerate(self.turns):
            for phrase, count in turn.mentions:
                out.setdefault(phrase, []).append((i, count))
        return out


def filler_count(rng: random.Random, turns: tuple[int, int, int] = (50, 10, 90)) -> int:
    """Logical filler turns in one meeting: ``base + randint(lo, hi) * 2 draws`` (easy: 70–230, near 150)."""
    base, lo, hi = turns
    return base + rng.randint(lo, hi) + rng.randint(lo, hi)


def render(
    seed: int,
    meeting_id: str,
    attendees: tuple[str, ...],
    lead: str,
    writer: FillerWriter,
    first: dict[str, str],
    blocks: list[list[LTurn]],
    rng: random.Random,
    filler_turns: tuple[int, int, int] = (50, 10, 90),
) -> RenderedMeeting:
    logical = _logical_turns(rng, attendees, lead, writer, first, blocks, filler_turns)
    for attempt in range(20):
        timed = _timed(rng_for(seed, "timing", meeting_id, attempt), logical, attendees)
        if timed is not None:
            break
    else:  # pragma: no cover - 20 misses in a row would need a 150-turn meeting with no long turn
        raise RuntimeError(f"{meeting_id}: could not place a collision and a backchannel")
    timed.sort(key=lambda t: (t.start, t.end, t.speaker))
    roster: dict[str, None] = {}
    for turn in timed:
        roster.setdefault(turn.speaker, None)
    return RenderedMeeting(tuple(timed), tuple(roster))


def _logical_turns(
    rng: random.Random,
    attendees: tuple[str, ...],
    lead: str,
    writer: FillerWriter,
    first: dict[str, str],
    blocks: list[list[LTurn]],
    filler_turns: tuple[int, int, int],
) -> list[LTurn]:
    n = filler_count(rng, filler_turns)
    weights = {a: (5 if a == lead else rng.randint(1, 4)) for a in attendees}
    speakers = [lead]
    for _ in range(1, n):
        options = [a for a in attendees if a != speakers[-1]]
        total = sum(weights[a] for a in options)
        roll = rng.randrange(total)
        for a in options:
            roll -= weights[a]
            if roll < 0:
                speakers.append(a)
                break
    for a in attendees:  # everyone invited speaks at least once, and nobody is crowded out
        if a not in speakers:
            said = {s: speakers.count(s) for s in attendees}
            slots = [
                i for i in range(1, n - 1)
                if speakers[i - 1] != a and speakers[i + 1] != a and said[speakers[i]] > 2
            ]
            speakers[slots[rng.randrange(len(slots))]] = a
    filler = [LTurn(lead, vocab.OPENINGS[rng.randrange(len(vocab.OPENINGS))])]
    for i in range(1, n - 1):
        filler.append(LTurn(speakers[i], writer.turn(writer.size(), first[speakers[i]])))
    filler.append(LTurn(lead, vocab.CLOSINGS[rng.randrange(len(vocab.CLOSINGS))]))

    # blocks go between filler turns, never before the opening or after the closing
    positions = sorted(rng.randrange(1, n) for _ in blocks)
    order = list(range(len(blocks)))
    rng.shuffle(order)
    placed: dict[int, list[list[LTurn]]] = {}
    for pos, b in zip(positions, order, strict=True):
        placed.setdefault(pos, []).append(blocks[b])
    out: list[LTurn] = []
    for i, turn in enumerate(filler):
        for block in placed.get(i, []):
            out.extend(block)
        out.append(turn)
    return out


def _timed(rng: random.Random, logical: list[LTurn], attendees: tuple[str, ...]) -> list[TimedTurn] | None:
    last_end = dict.fromkeys(attendees, -1000)
    out: list[TimedTurn] = []
    collisions = backchannels = 0
    prev_start = prev_end = 0
    for i, lt in enumerate(logical):
        words = len(lt.text.split())
        duration = words * rng.randint(30, 42) + rng.randint(20, 80)
        if i == 0:
            start = rng.randint(100, 500)
        else:
            if rng.randint(1, 100) <= OVERLAP_PERCENT:
                start = prev_end - rng.randint(10, 60)
            else:
                start = prev_end + rng.randint(5, 120)
            start = max(start, prev_start + 30, last_end[lt.speaker] + 10)
        end = start + duration
        out.append(TimedTurn(start, end, lt.speaker, lt.text, lt.tag, lt.mentions))
        last_end[lt.speaker] = end

        if i > 0 and duration >= 150 and rng.randint(1, 100) <= COLLISION_PERCENT:
            free = [a for a in attendees if a != lt.speaker and last_end[a] + 10 <= start]
            if free:
                who = free[rng.randrange(len(free))]
                text = vocab.COLLISIONS[rng.randrange(len(vocab.COLLISIONS))]
                c_end = start + len(text.split()) * 35 + rng.randint(30, 80)
                out.append(TimedTurn(start, c_end, who, text, None, ()))
                last_end[who] = c_end
                collisions += 1

        if duration >= LONG_TURN_CS and rng.randint(1, 100) <= lt.backchannel_percent:
            b_start = start + rng.randint(100, duration - 250)
            free = [a for a in attendees if a != lt.speaker and last_end[a] + 10 <= b_start]
            if free:
                who = free[rng.randrange(len(free))]
                b_end = b_start + rng.randint(40, 90)
                text = vocab.BACKCHANNELS[rng.randrange(len(vocab.BACKCHANNELS))]
                out.append(TimedTurn(b_start, b_end, who, text, None, ()))
                last_end[who] = b_end
                backchannels += 1
        prev_start, prev_end = start, end
    if not collisions or not backchannels:
        return None
    return out
