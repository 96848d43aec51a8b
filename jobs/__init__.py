"""Job entrypoints: what a Kubernetes Job runs, and what the local executor runs as subprocesses.

Each parses its arguments (flags, or the RAGSWEEP_* environment variables a Job spec sets),
calls the harness, and exits with a documented code (harness.errors).
"""
