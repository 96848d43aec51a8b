"""The project's exceptions and the CLI exit codes they map to.

Every refusal names what was wrong, what was expected and what to do. The exit
codes are part of the interface (docs/cli.md lists them):

    0  ok
    1  unexpected internal error (a bug: please report it)
    2  usage: bad flags or an unusable configuration
    3  refused to write results (e.g. a mixed embedding space)
    4  invalid input data: a malformed file, line or field
    5  integrity: checksum mismatch, missing or incomplete artefact
    6  licence: a non-publishable corpus without --accept-noncommercial
    7  validation: a generated corpus failed one of its named checks
    8  partial: a sweep finished, collected, and some arms failed (they are named)
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_INPUT = 4
EXIT_INTEGRITY = 5
EXIT_LICENCE = 6
EXIT_VALIDATION = 7
EXIT_PARTIAL = 8


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
