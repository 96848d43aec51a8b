"""The pinned sentence splitter used to cut long monologues into sub-chunks.

The methodology's punkt lesson: two splitters cut in different places, so an index built
by one process and measured by another silently differs. This splitter is pure Python,
has no model file to go missing, and its identity (name, version and a hash of its rules)
is written into provenance, so a change to any rule changes the recorded identity.
"""

from __future__ import annotations

import hashlib
import re

SPLITTER_NAME = "ragsweep-regex-sentences"
SPLITTER_VERSION = 1

# Tokens that end in a period without ending a sentence (compared casefolded).
_ABBREVIATIONS = (
    "mr.", "mrs.", "ms.", "dr.", "prof.", "sr.", "jr.", "st.", "vs.", "etc.", "e.g.", "i.e.",
    "approx.", "no.", "fig.", "inc.", "ltd.", "co.", "dept.", "est.", "jan.", "feb.", "mar.",
    "apr.", "jun.", "jul.", "aug.", "sep.", "sept.", "oct.", "nov.", "dec.",
)
_TERMINAL = re.compile(r"[.!?]+[\"')\]]*$")


def _rules_digest() -> str:
    material = "\n".join([_TERMINAL.pattern, *_ABBREVIATIONS, str(SPLITTER_VERSION)])
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]


SPLITTER_IDENTITY = f"{SPLITTER_NAME}/{SPLITTER_VERSION}+{_rules_digest()}"


def split_words_into_sentences(words: list[str]) -> list[int]:
    """Return the exclusive end index of every sentence over a word list.

    A word ends a sentence when it ends in terminal punctuation, is not a known
    abbreviation or a single initial ("J."), and is followed by a word that starts with an
    uppercase letter, a digit or a quote, or is the last word.
    """
    ends: list[int] = []
    for i, word in enumerate(words):
        last = i == len(words) - 1
        if last:
            ends.append(i + 1)
            break
        if not _TERMINAL.search(word):
            continue
        lowered = word.casefold()
        if lowered in _ABBREVIATIONS or re.fullmatch(r"[A-Za-z]\.", word):
            continue
        nxt = words[i + 1]
        if nxt[:1].isupper() or nxt[:1].isdigit() or nxt[:1] in "\"'(":
            ends.append(i + 1)
    return ends


def split_sentences(text: str) -> list[str]:
    """Split text into sentences (whitespace-normalised)."""
    words = text.split()
    out: list[str] = []
    start = 0
    for end in split_words_into_sentences(words):
        out.append(" ".join(words[start:end]))
        start = end
    return out
