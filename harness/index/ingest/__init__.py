"""Ingest: the relational store's segments -> chunk documents -> an index, one task per file.

The same functions run in both dispatch modes (docs/ingest.md). Modules, in the order
imports run:

* ``messages``: what travels in a task message (the store and sink specs, the reindex
  request, run and per-file job) and what comes back (the reindex and sweep reports).
* ``sinks``: where ``index_file`` writes (the embedded backend's per-file shards, or the
  stack index through :mod:`harness.index.opensearch.writer`).
* ``ledger``: the lock, snapshot and outcomes of one reindex run (in memory, or Redis).
* ``coordinator``: ``index_file`` per file, ``start_reindex`` / ``finish_reindex`` with
  the fail-closed orphan sweep, ``run_eager`` (all of it in-process) and the report checks.
* ``assemble``: the embedded index from the shards the tasks wrote.
* ``tasks``: the Celery app (``--dispatch celery``). It imports the coordinator; nothing
  here imports it.

Building a state through these (``state build --dispatch/--store``) is the state stage's
job: :mod:`harness.state.ingest`.
"""
