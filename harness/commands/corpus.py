"""``ragsweep corpus``: list the registry, fetch, verify, inspect and self-report corpora.

Readers are a registry of ``name -> "module:function"``, imported only when used, so
``ragsweep --help`` stays fast. A reader is called as ``reader(dest)``, or
``reader(dest, manifest=PATH)`` when ``--manifest`` is given, and returns a
:class:`harness.model.Corpus`.
"""

from __future__ import annotations

import argparse
import importlib
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import UsageError

if TYPE_CHECKING:
    from harness.model import Corpus

# corpus name -> its reader. A new corpus is one line here (plus its module).
READERS: dict[str, str] = {
    "qmsum": "harness.corpora.qmsum:read_qmsum",
    "synthetic": "harness.synthetic.adapter:read_synthetic",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "corpus",
        help="list, fetch, verify, inspect and self-report evaluation corpora",
        description="The corpus registry: licence tiers, pinned artefacts, offline verification, "
        "and what a corpus holds.",
    )
    parser.set_defaults(func=lambda _args: _print_help(parser))
    actions = parser.add_subparsers(dest="corpus_action", metavar="ACTION")

    listing = actions.add_parser("list", help="the registry: name, licence, tier, role, judgements")
    listing.set_defaults(func=cmd_list)

    fetch = actions.add_parser("fetch", help="download a corpus's pinned artefacts, checking sha256")
    fetch.add_argument("name", metavar="NAME")
    _dest(fetch)
    fetch.add_argument(
        "--mirror", metavar="URL", help="base URL (http(s):// or file://) or folder to fetch from"
    )
    fetch.add_argument(
        "--accept-noncommercial",
        action="store_true",
        help="acknowledge a tier B (non-commercial) licence: internal use only, never published",
    )
    _manifest(fetch)
    fetch.add_argument("--quiet", action="store_true", help="print only the summary line, not one line per file")
    fetch.add_argument(
        "--per-domain",
        type=int,
        metavar="N",
        help="fetch a subset: the N smallest files of each domain (manifest sizes, ties by path), plus every "
        "artefact without a domain; its manifest is written to DEST/SOURCES.tsv (read it with --manifest)",
    )
    fetch.set_defaults(func=cmd_fetch)

    probe = actions.add_parser(
        "probe",
        help="can NAME be fetched now? one read of its first artefact, upstream or --mirror (exit 0 yes, 5 no)",
    )
    probe.add_argument("name", metavar="NAME")
    probe.add_argument("--mirror", metavar="URL", help="probe this mirror instead of upstream")
    probe.add_argument("--timeout", type=float, default=5.0, metavar="S", help="seconds to wait (default 5)")
    _manifest(probe)
    probe.set_defaults(func=cmd_probe)

    verify = actions.add_parser("verify", help="offline: every artefact present with its size and sha256")
    verify.add_argument("name", metavar="NAME")
    _dest(verify)
    _manifest(verify)
    verify.set_defaults(func=cmd_verify)

    inspect = actions.add_parser("inspect", help="files, turns, words, queries per class, dropped counts")
    inspect.add_argument("name", metavar="NAME")
    _dest(inspect)
    _manifest(inspect)
    inspect.add_argument("--json", action="store_true", help="print JSON instead of text")
    inspect.set_defaults(func=cmd_inspect)

    report = actions.add_parser("report", help="BM25 gold-meeting self-report, per domain and pooled")
    report.add_argument("name", metavar="NAME")
    _dest(report)
    _manifest(report)
    report.add_argument("--json", action="store_true", help="print JSON instead of a table")
    report.set_defaults(func=cmd_report)


def _dest(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dest", metavar="DIR", type=Path, required=True, help="the corpus folder")


def _manifest(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--manifest", metavar="PATH", type=Path, help="use this manifest instead of the pinned one"
    )


def _print_help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


# --------------------------------------------------------------------------- handlers


def cmd_list(_args: argparse.Namespace) -> int:
    from harness.corpora.registry import SOURCES

    rows = [("name", "tier", "licence", "judgements", "manifest", "role")]
    for source in SOURCES.values():
        rows.append(
            (
                source.name,
                source.tier,
                source.licence,
                source.judgements,
                "pinned" if source.manifest else "-",
                source.role,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1])
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    from harness.corpora.fetch import fetch

    manifest: Any = args.manifest
    subset_text = None
    if args.per_domain is not None:
        from harness.corpora.registry import get_source, load_source_manifest
        from harness.corpora.subset import PerDomain, render, select

        rule = PerDomain(args.per_domain)
        source = load_source_manifest(get_source(args.name), args.manifest)
        manifest = select(source, rule)
        subset_text = render(manifest, source, rule)
    result = fetch(
        args.name,
        args.dest,
        mirror=args.mirror,
        accept_noncommercial=args.accept_noncommercial,
        manifest=manifest,
        progress=None if args.quiet else _print_fetched,
    )
    total = len(result.fetched) + len(result.present)
    print(
        f"{args.name}: {total} artefacts under {result.dest}: {len(result.fetched)} fetched, "
        f"{len(result.present)} already present"
    )
    if subset_text is not None:
        from harness.corpora.subset import write_subset_manifest
        from harness.outputfiles import writing

        with writing(result.dest, "--dest"):
            written = write_subset_manifest(result.dest, subset_text)
        print(f"{args.name}: subset manifest {written} (read the folder with --manifest {args.name}={written})")
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    """One line on stdout either way: probing is a question, so "no" is an answer, not an error message."""
    from harness.corpora.fetch import probe
    from harness.errors import EXIT_INTEGRITY

    where = "mirror" if args.mirror else "upstream"
    location, reason = probe(args.name, args.mirror, manifest=args.manifest, timeout_s=args.timeout)
    if reason is None:
        print(f"{args.name}: {where} reachable at {location}")
        return 0
    print(f"{args.name}: {where} unreachable: {reason} at {location}")
    return EXIT_INTEGRITY


def _print_fetched(path: str, status: str) -> None:
    if status == "fetched":
        print(f"fetched {path}", flush=True)


def cmd_verify(args: argparse.Namespace) -> int:
    from harness.corpora.fetch import list_problems
    from harness.corpora.integrity import raise_for_problems

    manifest, problems = list_problems(args.name, args.dest, manifest=args.manifest)
    for problem in problems:
        print(f"FAIL {problem}")
    raise_for_problems(problems, manifest, args.dest)
    print(f"{args.name}: {len(manifest.artefacts)} artefacts verified under {args.dest}")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    corpus = read_corpus(args.name, args.dest, args.manifest)
    summary = inspect_corpus(corpus)
    if args.json:
        print(json.dumps(summary, sort_keys=True, indent=2))
    else:
        for key, value in summary.items():
            shown = json.dumps(value, sort_keys=True) if isinstance(value, dict) else value
            print(f"{key}: {'n/a (harness.judge not available yet)' if value is None else shown}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from harness.corpora.selfreport import format_report, meeting_bm25_report

    corpus = read_corpus(args.name, args.dest, args.manifest)
    report = meeting_bm25_report(corpus.meetings, corpus.queries)
    if args.json:
        print(json.dumps(report, sort_keys=True, indent=2))
    else:
        print(format_report(report))
    return 0


# --------------------------------------------------------------------------- helpers


def reader_for(name: str) -> Callable[..., Any]:
    """The reader callable registered for ``name``, imported on first use."""
    try:
        target = READERS[name]
    except KeyError as e:
        raise UsageError(
            f"no reader for corpus {name!r} yet: 'inspect' and 'report' work for {', '.join(READERS)}"
        ) from e
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def read_corpus(name: str, dest: Path, manifest: Path | None = None) -> Corpus:
    reader = reader_for(name)
    if not Path(dest).is_dir():
        raise UsageError(f"--dest {dest} is not a folder; fetch the corpus there first")
    corpus: Corpus = reader(dest) if manifest is None else reader(dest, manifest=manifest)
    return corpus


def inspect_corpus(corpus: Corpus) -> dict[str, Any]:
    """Counts that say what a corpus holds (keys in print order)."""
    from harness.model import QUERY_CLASSES

    by_class = Counter(q.query_class for q in corpus.queries)
    by_domain = Counter(m.domain if m.domain is not None else "(none)" for m in corpus.meetings)
    return {
        "corpus": corpus.name,
        "version": corpus.version,
        "tier": corpus.tier,
        "licence": corpus.licence,
        "files": len(corpus.meetings),
        "files_by_domain": dict(sorted(by_domain.items())),
        "files_with_real_timings": sum(1 for m in corpus.meetings if m.timings_real),
        "turns": sum(len(m.turns) for m in corpus.meetings),
        "words": sum(m.words for m in corpus.meetings),
        "queries": len(corpus.queries),
        "queries_by_class": {cls: by_class.get(cls, 0) for cls in QUERY_CLASSES},
        "dropped": dict(sorted(corpus.dropped.items())),
        "queries_dropped_unjudgeable": count_unjudgeable(corpus),
    }


def count_unjudgeable(corpus: Corpus) -> int | None:
    """Rank-scored queries whose gold maps to no chunk; None until the judge stage exists."""
    try:
        from harness.index.chunking import chunk_meeting
        from harness.judge import judge
    except ModuleNotFoundError as e:
        if e.name not in ("harness.index.chunking", "harness.judge", "harness.index"):
            raise
        return None
    chunks = [chunk for meeting in corpus.meetings for chunk in chunk_meeting(meeting)]
    queries = [q for q in corpus.queries if q.scored_on == "rank"]
    return len(judge(queries, corpus.meetings, chunks).dropped_unjudgeable)
