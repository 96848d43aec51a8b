"""The ``ragsweep`` command: one sub-command per stage, registered from a table.

Each sub-command lives in ``harness.commands`` (the one layer allowed to import every
stage) and exposes ``register(subparsers)``.
Modules named here must not import heavy libraries at import time, so that
``ragsweep --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO

from harness import __version__
from harness.errors import EXIT_INTERNAL, HarnessError, mask_secrets, one_line

# name -> module that defines it (registration order is the order --help prints)
COMMANDS: dict[str, str] = {
    "corpus": "harness.commands.corpus",
    "synth": "harness.commands.synth",
    "score": "harness.commands.score",
    "state": "harness.commands.state",
    "cache": "harness.commands.cache",
    "bench": "harness.commands.bench",
    "sweep": "harness.commands.sweep",
    "agreement": "harness.commands.agreement",
    "report": "harness.commands.report",
    "reranker": "harness.commands.reranker",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragsweep",
        description="Measure whether a retrieval change finds the right evidence in meeting transcripts.",
        epilog="Exit codes: 0 ok, 1 internal error, 2 usage, 3 refused to write results, "
        "4 invalid input data, 5 integrity, 6 licence, 7 validation, 8 sweep finished with failed arms, "
        "9 storage (an output that cannot be written, or an object store that refused).",
    )
    parser.add_argument("--version", action="version", version=f"ragsweep {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMANDS.values():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name != module_name:
                raise
            continue  # a stage not built yet
        module.register(subparsers)
    return parser


class _StderrHandler(logging.StreamHandler):
    """Writes each record to whatever ``sys.stderr`` is at that moment (a test's capture, a pipe)."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


class _Formatter(logging.Formatter):
    """INFO is progress printed as is (what library code used to print); WARNING and above say so,
    after the program's name, as its error lines do (``ragsweep: warning: ...``)."""

    def __init__(self, prog: str) -> None:
        super().__init__("%(message)s")
        self.prog = prog

    def format(self, record: logging.LogRecord) -> str:
        text = mask_secrets(super().format(record))  # a warning quoting a URL is masked as an error line is
        if record.levelno >= logging.WARNING:
            return f"{self.prog}: {record.levelname.lower()}: {text}"
        return text


@contextmanager
def logging_to_stderr(level: int = logging.INFO, *, prog: str = "ragsweep") -> Iterator[None]:
    """Library code logs to ``harness.*`` loggers; the CLI decides that INFO and above reach stderr.

    Only the ``harness`` logger is configured (botocore, urllib3 keep their own defaults), and only
    while a command runs, so calling ``main`` many times (tests do) stacks nothing. Every jobs/
    entrypoint runs under it too, with its own name as ``prog`` (``jobs.arm: warning: ...``).
    """
    logger = logging.getLogger("harness")
    handler = _StderrHandler()
    handler.setFormatter(_Formatter(prog))
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


def main(argv: Sequence[str] | None = None) -> int:
    with logging_to_stderr():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except HarnessError as e:
        print(f"ragsweep: error: {one_line(str(e))}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("ragsweep: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:
        print(f"ragsweep: internal error: {type(e).__name__}: {one_line(str(e))}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
