"""The project's exceptions and the CLI exit codes they map to.

Every refusal names what was wrong, what was expected and what to do. The exit
codes are part of the interface (README.md, "Commands", lists them):

    0  ok
    1  unexpected internal error (a bug: please report it)
    2  usage: bad flags or an unusable configuration
    3  refused to write results (e.g. a mixed embedding space)
    4  invalid input data: a malformed file, line or field
    5  integrity: checksum mismatch, missing or incomplete artefact
    6  licence: a non-publishable corpus without --accept-noncommercial
    7  validation: a generated corpus failed one of its named checks
    8  partial: a sweep finished, collected, and some arms failed (they are named)
    9  storage: an output could not be written (a read-only, full or unwritable folder, named) or
       an object store refused or stayed unreachable; not in harness.sweep.k8s.builders'
       DETERMINISTIC_EXIT_CODES, since space can be freed and a store can come back

A message is printed as one line (:func:`one_line`), with any password it quotes masked
(:func:`mask_secrets`), whatever raised it.
"""

from __future__ import annotations

import re

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_INPUT = 4
EXIT_INTEGRITY = 5
EXIT_LICENCE = 6
EXIT_VALIDATION = 7
EXIT_PARTIAL = 8
EXIT_STORAGE = 9


class HarnessError(Exception):
    """Base class: an error the user can act on. Its message is one line."""

    exit_code = EXIT_INTERNAL


class UsageError(HarnessError):
    """Bad flags, or a configuration that cannot be used as given."""

    exit_code = EXIT_USAGE


class RefusedError(HarnessError):
    """The harness refuses to write a result that would not mean anything."""

    exit_code = EXIT_REFUSED


class InputDataError(HarnessError):
    """A file's content is malformed; the message names file, line or field."""

    exit_code = EXIT_INPUT


class IntegrityError(HarnessError):
    """A checksum does not match, or an artefact is missing or incomplete."""

    exit_code = EXIT_INTEGRITY


class LicenceError(HarnessError):
    """A corpus whose licence tier needs an explicit acknowledgement."""

    exit_code = EXIT_LICENCE


class ValidationError(HarnessError):
    """A generated corpus failed a named validator check."""

    exit_code = EXIT_VALIDATION


class StorageError(HarnessError):
    """An output could not be written (the message names the folder or file and says why), or an
    object store refused a request or stayed unreachable after retrying what was transient."""

    exit_code = EXIT_STORAGE


# -- messages: one line, no secrets ---------------------------------------------------------------

# scheme://user:PASSWORD@host: libpq ends the user info at the first "/" (an "@" in a password must be
# %40), so the password is everything up to the last "@" before it
_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)[^\s/]*@")
# key=value (libpq's key=value DSN, a URL query, an environment assignment) or "key": value (JSON, a
# dict), where the key names a password, secret or token; the value bare, or quoted, backslash escapes too
_SECRET_KEY = r"[A-Za-z0-9_]*(?:password|passwd|secret|token)[A-Za-z0-9_]*"
_KEY_SECRET = re.compile(
    rf"""(?P<head>\b{_SECRET_KEY}\s*=\s*|(?P<q>["']){_SECRET_KEY}(?P=q)\s*:\s*)"""
    r"""(?:'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|(?:\\.|[^\s&#;,'"\\])+)""",
    re.IGNORECASE)


def mask_secrets(text: str) -> str:
    """``text`` with every password it quotes replaced by ``***``: a URL's user info
    (``postgresql://me:***@db/x``), a URL query or a libpq key=value DSN (``password=***``, quoted
    values too: ``password='a b'``), an environment assignment (``PGPASSWORD=***``)."""
    text = _URL_PASSWORD.sub(r"\g<head>***@", text)
    return _KEY_SECRET.sub(r"\g<head>***", text)


def one_line(text: str) -> str:
    """A message as the one line the CLI prints: line breaks (a library's multi-line message) joined
    with "; ", and secrets masked."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    joined = ""
    for line in lines:
        joined += line if not joined else (" " if joined[-1] in ".,;:?!" else "; ") + line
    return mask_secrets(joined)
