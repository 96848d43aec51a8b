"""The rule that puts a QMSum specific query in the ``summarize`` or the ``lookup`` class.

QMSum does not label query classes. A query is ``summarize`` only when it explicitly asks
for a summary or an account of a discussion, at the start of the query:

=====================  ==========================================================
rule                   matches (case-insensitive, at the start, "please" allowed)
=====================  ==========================================================
summarize-verb         "summarize / summarise / sum up / recap ...",
                       also after "can/could/would you"
summary-noun           "give / provide / write (me|us) a (brief|short|quick)
                       summary / overview / recap ..."
describe-discussion    "(briefly) describe the [one word] discussion / debate /
                       conversation / meeting ..."
discussion-about       "what was/were the (main|general) discussion(s) / debate /
                       conversation about|on|of|regarding|concerning ...",
                       "what was/were/has been discussed ..."
=====================  ==========================================================

Everything else is ``lookup``. The rule is deliberately conservative: a query that names
a speaker's opinion or a fact ("what did the group discuss about the price?", "why did
Marketing prefer rubber?", "describe the prototype") stays ``lookup``, because a
mislabelled lookup would move a precision question into the coverage table. The rule's
identity (a hash of its patterns) is recorded so a changed rule is visible in results.
"""

from __future__ import annotations

import hashlib
import re

from harness.model import QueryClass

CLASSIFIER_NAME = "qmsum-summarize-rule"
CLASSIFIER_VERSION = 1

_POLITE = r"(?:please\s+|(?:can|could|would)\s+you\s+(?:please\s+)?)?"
_DISCUSSION = r"(?:discussions?|debates?|conversations?|meetings?)"

SUMMARIZE_RULES: dict[str, re.Pattern[str]] = {
    "summarize-verb": re.compile(rf"^{_POLITE}(?:summari[sz]e|sum\s+up|recap)\b", re.IGNORECASE),
    "summary-noun": re.compile(
        rf"^{_POLITE}(?:give|provide|write)\s+(?:me\s+|us\s+)?an?\s+(?:brief\s+|short\s+|quick\s+)?"
        r"(?:summary|overview|recap)\b",
        re.IGNORECASE,
    ),
    "describe-discussion": re.compile(
        rf"^{_POLITE}(?:briefly\s+)?describe\s+the\s+(?:\w+\s+)?{_DISCUSSION}\b", re.IGNORECASE
    ),
    "discussion-about": re.compile(
        r"^what\s+(?:(?:was|were)\s+(?:the\s+)?(?:main\s+|general\s+)?"
        rf"{_DISCUSSION}\s+(?:about|on|of|regarding|concerning)\b"
        r"|(?:was|were|has\s+been|had\s+been)\s+discussed\b)",
        re.IGNORECASE,
    ),
}


def _identity() -> str:
    material = "\n".join(f"{name}={rule.pattern}" for name, rule in SUMMARIZE_RULES.items())
    digest = hashlib.sha256(f"{material}\n{CLASSIFIER_VERSION}".encode()).hexdigest()[:16]
    return f"{CLASSIFIER_NAME}/{CLASSIFIER_VERSION}+{digest}"


CLASSIFIER_IDENTITY = _identity()


def summarize_rule(text: str) -> str | None:
    """The name of the first summarize rule that ``text`` matches, or None."""
    stripped = text.strip()
    for name, rule in SUMMARIZE_RULES.items():
        if rule.match(stripped):
            return name
    return None


def classify_query(text: str) -> QueryClass:
    """``summarize`` when a summarize rule matches, else ``lookup``."""
    return "summarize" if summarize_rule(text) is not None else "lookup"
