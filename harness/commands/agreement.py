"""``ragsweep agreement``: do the two corpora rank the arms' changes the same way?"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.errors import UsageError

CLASSES = ("all", "lookup", "summarize", "multi_file", "aggregation")
# ``--versus --json`` over several corpora: one analysis per corpus, keyed by its name.
VERSUS_SCHEMA = "ragsweep.agreement-versus/1"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "agreement", help="rank agreement of arm deltas between two corpora (Kendall tau-b headline)",
        description="Each arm's delta against its own family control on each corpus; Kendall tau-b, Spearman "
                    "and Pearson per family and pooled; sign agreement with inert arms counted apart.")
    source = p.add_argument_group("arms (one source)")
    source.add_argument("--sweep", type=Path, metavar="DIR", help="a local artefact store root (the sweep's --out)")
    source.add_argument("--sweep-id", help="the sweep to read under --sweep")
    source.add_argument("--versus", metavar="SWEEP_ID",
                        help="with --sweep/--sweep-id: compare the same arms in a second sweep under --sweep on one "
                             "corpus (e.g. the embedded and the stack backend) instead of two corpora in one sweep")
    source.add_argument("--corpus", help="with --versus: the corpus compared (default: every corpus both sweeps "
                                         "measured, one analysis each)")
    source.add_argument("--catalogue", type=Path, metavar="MANIFEST",
                        help="with --sweep: the families the sweep ran, if not the built-in catalogue")
    source.add_argument("--manifest", type=Path, metavar="F",
                        help="arms measured elsewhere: the --emit-manifest shape, each arm with run: PATH "
                             "to its metrics.json (relative to F)")
    source.add_argument("--emit-manifest", action="store_true",
                        help="print the built-in catalogue as a manifest and exit")
    p.add_argument("--class", dest="query_class", default="all", choices=CLASSES,
                   help="the query class compared (default all; lookup is the class the gate protects)")
    p.add_argument("--measure", default="nDCG@10", help="default nDCG@10")
    p.add_argument("--drop", action="append", default=[], metavar="ARM", help="leave an arm out (repeatable)")
    p.add_argument("--exclude-inert", action="store_true", help="leave out arms that moved nothing on either corpus")
    p.add_argument("--relative", action="store_true", help="Δ as percent of the family control (ranks unchanged)")
    p.add_argument("--corpora", metavar="FIRST,SECOND",
                   help="the two corpora to compare; default the two in the rows, in name order")
    p.add_argument("--json", action="store_true", help="print the analysis as JSON")
    p.set_defaults(func=run)


def _measured(results: Any) -> dict[str, str | None]:
    """Arm name -> the measurement identity its complete.json records (harness.sweep.measured)."""
    return {r.arm.name: r.measured_on for r in results if r.complete}


def run(args: argparse.Namespace) -> int:
    from harness.metrics.measures import parse_measure
    from harness.report.files import dumps
    from harness.sweep.agreement import (
        analyse,
        pair_sweeps,
        ran_families,
        render_agreement,
        results_from_manifest,
        results_from_store,
        shared_corpora,
    )
    from harness.sweep.catalogue import CATALOGUE
    from harness.sweep.manifest import emit_manifest, load_manifest
    from harness.sweep.measured import check_one_measurement, check_versus
    from harness.sweep.storage import LocalFolderStore

    if args.emit_manifest:
        sys.stdout.write(emit_manifest())
        return 0
    if args.manifest and (args.sweep or args.sweep_id):
        raise UsageError("give --manifest or --sweep/--sweep-id, not both")
    if (args.versus or args.corpus) and not (args.sweep and args.sweep_id):
        raise UsageError("--versus and --corpus need --sweep DIR --sweep-id ID")
    if args.manifest:
        catalogue, results = results_from_manifest(args.manifest)
    elif args.sweep and args.sweep_id:
        if not args.sweep.is_dir():
            raise UsageError(f"--sweep {args.sweep}: no such folder")
        catalogue = load_manifest(args.catalogue) if args.catalogue else CATALOGUE
        results = results_from_store(LocalFolderStore(args.sweep), args.sweep_id, catalogue)
        other = results_from_store(LocalFolderStore(args.sweep), args.versus, catalogue) if args.versus else []
        check_one_measurement(args.sweep_id, _measured(results))  # one sweep id, one measurement (exit 5)
        catalogue = ran_families(catalogue, [*results, *other])
        if args.versus:
            if args.corpora:
                raise UsageError("--corpora compares two corpora in one sweep; with --versus name one --corpus")
            check_versus((args.sweep_id, args.versus), _measured(results), _measured(other))
            # One analysis per corpus both sweeps measured (or the one --corpus names): the backends compared
            # on each corpus apart, never pooled across corpora.
            names: list[str | None] = [args.corpus] if args.corpus else [*shared_corpora(results, other)] or [None]
            docs: dict[str, Any] = {}
            for name in names:
                paired, labels, corpus = pair_sweeps(results, other, (args.sweep_id, args.versus), name)
                print(f"# {args.sweep_id} ({labels[0]}) versus {args.versus} ({labels[1]}), corpus {corpus}",
                      file=sys.stderr)
                docs[corpus] = analyse(paired, catalogue.families, query_class=args.query_class,
                                       measure=parse_measure(args.measure).name, drop=args.drop,
                                       exclude_inert=args.exclude_inert, relative=args.relative,
                                       corpora=list(labels))
            if len(docs) == 1:
                return _print(next(iter(docs.values())), args.json)
            if args.json:
                sys.stdout.write(dumps({"schema": VERSUS_SCHEMA, "per_corpus": docs}))
            else:
                sys.stdout.write("\n".join(f"## corpus {c}\n\n{render_agreement(d)}" for c, d in docs.items()))
            return 0
    else:
        raise UsageError("name the arms: --sweep DIR --sweep-id ID, or --manifest F (see --emit-manifest)")
    corpora = [c.strip() for c in args.corpora.split(",")] if args.corpora else None
    doc = analyse(results, catalogue.families, query_class=args.query_class,
                  measure=parse_measure(args.measure).name, drop=args.drop, exclude_inert=args.exclude_inert,
                  relative=args.relative, corpora=corpora)
    return _print(doc, args.json)


def _print(doc: dict[str, Any], as_json: bool) -> int:
    from harness.report.files import dumps
    from harness.sweep.agreement import render_agreement

    sys.stdout.write(dumps(doc) if as_json else render_agreement(doc))
    return 0

