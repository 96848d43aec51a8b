"""Filler: conversational turns that sound like a meeting and say nothing planted.

Sentences are built from short templates with several slots each, so two meetings share
few word 5-grams (the self-report measures that). Filler draws only from the filler
vocabulary, which shares no word with codenames and names no area, so it cannot produce
a planted phrase (the validator's ``no_accidental_markers`` check re-proves this).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from harness.synthetic import vocab

SHORT, MEDIUM, LONG = "short", "medium", "long"


class FillerWriter:
    """Writes filler for one meeting: its kind's topics, its attendees' first names."""

    def __init__(self, rng: random.Random, kind: str, team: str, first_names: list[str],
                 things: tuple[str, ...] | None = None) -> None:
        self.rng = rng
        self.team = team
        # ``things``: a series' own few (the archive regime's series vocabulary); else the kind's and the generic
        self.things = things if things is not None else (*vocab.KIND_THINGS[kind], *vocab.GENERIC_THINGS)
        self.names = tuple(first_names)
        self.speaking: str | None = None  # the current speaker's first name: not addressed
        self._templates: tuple[Callable[[], str], ...] = (
            lambda: f"{self._c(vocab.SUBJECT_MODALS)} {self._c(vocab.VERBS)} {self.thing()} {self._c(vocab.WHEN)}.",
            lambda: f"I think {self.thing()} is {self._c(vocab.ASSESSMENTS)}.",
            lambda: f"my worry is that {self.thing()} {self._c(vocab.PROBLEMS)}.",
            lambda: f"do we have an update on {self.thing()}?",
            lambda: f"can we {self._c(vocab.VERBS)} {self.thing()} {self._c(vocab.WHEN)}?",
            lambda: f"I'll {self._c(vocab.VERBS)} {self.thing()} and send a note round.",
            lambda: f"we're at about {self.rng.randint(2, 60)} {self._c(vocab.UNITS)} on {self.thing()}.",
            lambda: f"last time we said we'd {self._c(vocab.VERBS)} {self.thing()}, and I don't think that happened.",
            lambda: f"the question is whether {self.thing()} is worth the effort.",
            lambda: f"it depends on {self.thing()}, really.",
            lambda: f"if we {self._c(vocab.VERBS)} {self.thing()}, {self.thing()} gets easier.",
            lambda: f"let me {self._c(vocab.PROCESS_ACTIONS)}.",
            lambda: f"that's a fair point about {self.thing()}.",
            lambda: f"{self.name()} mentioned {self.thing()} earlier, which ties into this.",
            lambda: f"from the {self.team.lower()} side, {self.thing()} is {self._c(vocab.ASSESSMENTS)}.",
            lambda: f"nobody has looked at {self.thing()} since {self._c(vocab.PAST)}.",
            lambda: f"we could also just {self._c(vocab.VERBS)} {self.thing()} and see what happens.",
            lambda: f"I'm not sure {self.thing()} is the bottleneck.",
            lambda: f"the numbers on {self.thing()} look {self._c(vocab.TRENDS)}.",
            lambda: f"can someone own {self.thing()}?",
            lambda: (f"I'd rather {self._c(vocab.VERBS)} {self.thing()} first and "
                     f"{self._c(vocab.VERBS)} {self.thing()} after that."),
            lambda: f"{self.thing()} {self._c(vocab.PROBLEMS)}, so {self._c(vocab.SUBJECT_MODALS)} "
            f"{self._c(vocab.VERBS)} it {self._c(vocab.WHEN)}.",
            lambda: f"what's blocking {self.thing()} right now?",
            lambda: f"there's a comment from {self.name()} on {self.thing()} that we haven't answered.",
            lambda: f"I counted {self.rng.randint(2, 40)} {self._c(vocab.UNITS)} in {self.thing()} last week.",
            lambda: f"to me {self.thing()} looks {self._c(vocab.ASSESSMENTS)}, but I could be wrong.",
            lambda: f"if nobody objects, {self._c(vocab.SUBJECT_MODALS)} {self._c(vocab.VERBS)} "
            f"{self.thing()} {self._c(vocab.WHEN)}.",
            lambda: f"who's the right person to {self._c(vocab.VERBS)} {self.thing()}?",
            lambda: f"one more thing on {self.thing()}: it's {self._c(vocab.ASSESSMENTS)}.",
            lambda: f"{self.name()}, did you get a chance to {self._c(vocab.VERBS)} {self.thing()}?",
        )

    def _c(self, options: tuple[str, ...]) -> str:
        return options[self.rng.randrange(len(options))]

    def thing(self) -> str:
        return self.things[self.rng.randrange(len(self.things))]

    def name(self) -> str:
        others = tuple(n for n in self.names if n != self.speaking) or self.names
        return self._c(others)

    def sentence(self) -> str:
        opener = self._c(vocab.OPENERS)
        body = self._templates[self.rng.randrange(len(self._templates))]()
        if opener and not opener.endswith(". ") and body[0].islower():
            return opener + body
        return opener + body[0].upper() + body[1:]

    def sentences(self, low: int, high: int) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(low, high)))

    def size(self) -> str:
        roll = self.rng.randint(1, 100)
        return SHORT if roll <= 35 else MEDIUM if roll <= 80 else LONG

    def turn(self, size: str, speaking: str | None = None) -> str:
        self.speaking = speaking
        if size == SHORT:
            return self._c(vocab.SHORT_REPLIES)
        if size == MEDIUM:
            return self.sentences(1, 2)
        return self.sentences(3, 6)
