"""Exact-phrase occurrence counting and title patterns: one definition for every engine.

Why the count is made in Python and not by the database
-------------------------------------------------------
The methodology's R5 counts with Postgres ``regexp_count`` over
``transcript_segment.text`` (chunk overlap double-counts a long turn's tail, so the
count cannot come from the index). SQLite has no ``regexp_count``, and the two engines'
regex dialects disagree anyway: word boundaries (``\\m``/``\\M`` vs ``\\b``) and
case-insensitivity follow the server's locale in Postgres. A count that two backends of
one conformance suite may answer differently is not an exact count. So each engine runs
the same portable prefilter, ``lower(text) LIKE ?``, to fetch candidate rows, and this
module's one regex counts in them, for SQLite now and for Postgres later.

The prefilter is built to be a superset of what the regex matches, whatever the engine's
``lower()`` does beyond ASCII: it keeps only ASCII characters whose case folding
is the same everywhere and turns everything else into ``%`` (see :func:`like_needle`).

Matching semantics (docs/store.md):

* case-insensitive (Python ``re.IGNORECASE``, Unicode simple case folding);
* whitespace inside the phrase matches any run of whitespace; leading and trailing
  whitespace is ignored;
* whole words: where the phrase begins (ends) with a word character, the text must not
  continue the word before (after) it, so ``audit`` does not match ``audits`` or
  ``preaudit``;
* non-overlapping, leftmost-first occurrences (what ``regexp_count`` counts), per
  segment: a phrase split across two segments is not an occurrence.
"""

from __future__ import annotations

import re
from functools import lru_cache

from harness.errors import UsageError

# The only characters Python's IGNORECASE matches against non-ASCII ones: i <-> U+0130 /
# U+0131, s <-> U+017F, k <-> U+212A. A database's lower() may not fold those the same
# way, so the prefilter must not insist on them.
_FOLDS_BEYOND_ASCII = frozenset("iks")
_LIKE_ESCAPE = "!"
_LIKE_SPECIAL = frozenset("%_" + _LIKE_ESCAPE)


def normalise_phrase(phrase: str) -> str:
    """The phrase as matched: whitespace runs collapsed to one space, ends stripped."""
    words = phrase.split()
    if not words:
        raise UsageError("the phrase to count is empty; pass the exact words to look for")
    return " ".join(words)


@lru_cache(maxsize=256)
def phrase_regex(phrase: str) -> re.Pattern[str]:
    """The compiled pattern that counts ``phrase`` (see the module docstring)."""
    norm = normalise_phrase(phrase)
    body = r"\s+".join(re.escape(word) for word in norm.split(" "))
    head = r"(?<!\w)" if re.match(r"\w", norm) else ""
    tail = r"(?!\w)" if re.search(r"\w$", norm) else ""
    return re.compile(head + body + tail, re.IGNORECASE)


def count_occurrences(phrase: str, text: str) -> int:
    """Occurrences of ``phrase`` in one segment's text."""
    return sum(1 for _ in phrase_regex(phrase).finditer(text))


def like_needle(phrase: str) -> str:
    """A ``lower(text) LIKE ? ESCAPE '!'`` pattern matching every text the phrase occurs in.

    Kept: lower-case ASCII characters outside ``i``, ``k``, ``s`` (escaped where LIKE
    gives them meaning). Turned into ``%``: whitespace (it matches any run), non-ASCII
    characters (engines lower-case them differently) and ``i``/``k``/``s`` (IGNORECASE
    also matches them against non-ASCII letters). ``%`` may match more, never less.
    """
    out: list[str] = ["%"]
    for ch in normalise_phrase(phrase).lower():
        if ch.isspace() or not ch.isascii() or ch in _FOLDS_BEYOND_ASCII:
            if out[-1] != "%":
                out.append("%")
        elif ch in _LIKE_SPECIAL:
            out.append(_LIKE_ESCAPE + ch)
        else:
            out.append(ch)
    if out[-1] != "%":
        out.append("%")
    return "".join(out)


@lru_cache(maxsize=64)
def title_regex(title_like: str) -> re.Pattern[str]:
    """A SQL LIKE pattern (``%`` any run, ``_`` one character, no escape) as a regex.

    Matched against the whole title, case-insensitively; used in Python so both engines
    scope titles identically (LIKE is case-insensitive in SQLite, case-sensitive in
    Postgres).
    """
    if not title_like:
        raise UsageError("the title pattern is empty; pass a LIKE pattern such as 'Cedar — standup%'")
    parts = {"%": ".*", "_": "."}
    return re.compile("".join(parts.get(ch) or re.escape(ch) for ch in title_like),
                      re.IGNORECASE | re.DOTALL)


def title_matches(title_like: str, title: str) -> bool:
    return title_regex(title_like).fullmatch(title) is not None
