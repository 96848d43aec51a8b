"""Job entrypoints: what a Kubernetes Job runs, and what the local executor runs as subprocesses.

Each parses its arguments (flags, or the RAGSWEEP_* environment variables a Job spec sets, read
through the one settings model, harness.commands.settings), configures logging once as the CLI
does (harness.cli.logging_to_stderr, under its own name), calls the harness, and exits with a
documented code (harness.errors): ``arm`` (one arm, or a group's), ``legs`` (a group's shared legs),
``scores`` (a group's cross-encoder scores, one part of its queries), ``collect`` (the comparison), ``sync`` (a
folder in or out of the object store, the init containers' step), ``baselines`` (re-derive the
committed baselines). Each one's ``main`` is :func:`entrypoint` around its own body.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from harness.cli import logging_to_stderr
from harness.errors import HarnessError, one_line


def entrypoint(prog: str, body: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None) -> int:
    """Run a job's ``body`` with logging configured once, as the CLI does (a library warning reads
    ``PROG: warning: ...``); a HarnessError is one ``PROG: error: ...`` line (secrets masked) and its exit code."""
    with logging_to_stderr(prog=prog):
        try:
            return body(argv)
        except HarnessError as e:
            print(f"{prog}: error: {one_line(str(e))}", file=sys.stderr)
            return e.exit_code
