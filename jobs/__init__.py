"""Job entrypoints: what a Kubernetes Job runs, and what the local executor runs as subprocesses.

Each parses its arguments (flags, or the RAGSWEEP_* environment variables a Job spec sets, read
through the one settings model, harness.commands.settings), configures logging once as the CLI
does (harness.cli.logging_to_stderr, under its own name), calls the harness, and exits with a
documented code (harness.errors): ``arm`` (one arm), ``collect`` (the comparison), ``sync`` (a
folder in or out of the object store, the init containers' step), ``baselines`` (re-derive the
committed baselines).
"""
