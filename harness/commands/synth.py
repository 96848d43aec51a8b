"""``ragsweep synth``: generate, select and validate the synthetic tier (docs/synthetic.md).

    ragsweep synth generate --seed 20260812 --meetings 2000 --out DIR
    ragsweep synth select --from DIR --budget 200 --out DIR2
    ragsweep synth validate DIR

generate and select write atomically (a temporary folder, validated, then renamed) and
refuse a non-empty ``--out`` without ``--force``. A corpus failing one of the ten
validator checks exits 7 naming the check and its first offending item.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

# defaults repeated here (not imported) so that --help imports nothing but argparse
DEFAULT_SEED = 20260812
DEFAULT_MEETINGS = 2000
DEFAULT_BUDGET = 200


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "synth",
        help="generate, select and validate the synthetic corpus (no language model anywhere)",
        description="The synthetic tier: a seeded generator with gold known by construction, a ten-check "
        "validator, and budgeted selection by gold closure.",
    )
    parser.set_defaults(func=lambda _args: _help(parser))
    actions = parser.add_subparsers(dest="synth_action", metavar="ACTION")

    gen = actions.add_parser("generate", help="write a corpus of N meetings from a seed")
    gen.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"the seed (default {DEFAULT_SEED})")
    gen.add_argument("--meetings", type=int, default=DEFAULT_MEETINGS,
                     help=f"how many meetings (default {DEFAULT_MEETINGS})")
    gen.add_argument("--regime", choices=("archive", "easy"), default="archive",
                     help="archive (default): recurring series, hour-long meetings, lookups told apart by date or "
                          "attendees, topics several series discuss; easy: the first generator's corpus, for fast "
                          "tests (docs/synthetic.md, 'Regimes')")
    gen.add_argument("--without", action="append", default=[], metavar="MECHANISM",
                     choices=("long_meetings", "series_vocabulary", "sibling_facts", "shared_topics"),
                     help="switch one of the regime's mechanisms off (an ablation; repeatable)")
    gen.add_argument("--out", type=Path, required=True, metavar="DIR", help="the folder to create")
    gen.add_argument("--force", action="store_true", help="replace a non-empty --out")
    gen.set_defaults(func=cmd_generate)

    sel = actions.add_parser("select", help="keep BUDGET meetings, and only the queries whose gold they close")
    sel.add_argument("--from", dest="source", type=Path, required=True, metavar="DIR", help="a generated corpus")
    sel.add_argument("--budget", type=int, default=DEFAULT_BUDGET,
                     help=f"meetings to keep (default {DEFAULT_BUDGET})")
    sel.add_argument("--out", type=Path, required=True, metavar="DIR", help="the folder to create")
    sel.add_argument("--force", action="store_true", help="replace a non-empty --out")
    sel.add_argument("--min-lookup", type=int, default=50, help="lookup quota of the greedy's first phase")
    sel.add_argument("--min-multi-file", type=int, default=25, help="multi_file quota of the first phase")
    sel.add_argument("--min-per-rule", type=int, default=4, help="quota per aggregation rule in the first phase")
    sel.set_defaults(func=cmd_select)

    val = actions.add_parser("validate", help="run the ten checks; exit 7 naming the first that fails")
    val.add_argument("dir", type=Path, metavar="DIR")
    val.add_argument("--json", action="store_true", help="print the check results as JSON")
    val.set_defaults(func=cmd_validate)


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def cmd_generate(args: argparse.Namespace) -> int:
    from harness.synthetic.pipeline import generate_corpus
    from harness.synthetic.regime import regime_named

    regime = regime_named(args.regime, without=tuple(args.without))
    written = generate_corpus(args.out, seed=args.seed, meetings=args.meetings, force=args.force, regime=regime)
    _print_written(written)
    return 0


def cmd_select(args: argparse.Namespace) -> int:
    from harness.synthetic.pipeline import select_corpus
    from harness.synthetic.select import Quotas

    quotas = Quotas(lookup=args.min_lookup, multi_file=args.min_multi_file, per_rule=args.min_per_rule)
    written = select_corpus(args.source, args.out, budget=args.budget, force=args.force, quotas=quotas)
    _print_written(written)
    report = written.selection or {}
    dropped = report.get("dropped", {})
    reasons = ", ".join(f"{k} {v}" for k, v in dropped.get("by_reason", {}).items())
    print(f"dropped {dropped.get('count', 0)} queries ({reasons}); details in {args.out}/selection.json")
    if not report.get("quotas_met", True):
        print(f"ragsweep: warning: the quotas {report.get('quotas')} were not all met within the budget",
              file=sys.stderr)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from harness.synthetic.validate import raise_for_results, summary, validate

    results = validate(args.dir)
    if args.json:
        print(json.dumps(summary(results), sort_keys=True, indent=2))
    else:
        for result in results:
            print(result.line())
    raise_for_results(args.dir, results)
    print(f"{args.dir}: all {len(results)} checks passed")
    return 0


def _print_written(written: Any) -> None:
    q = written.queries
    by_class = ", ".join(f"{k} {v}" for k, v in q["by_class"].items())
    by_rule = ", ".join(f"{k.split('-')[0]} {v}" for k, v in q["by_rule"].items())
    print(f"wrote {written.out}: {written.meetings} meetings, {q['total']} queries ({by_class}; {by_rule})")
    print(f"validation: all {len(written.checks)} checks passed")
    report = written.selfreport
    bm25 = report["bm25"]
    if bm25.get("available"):
        print(f"BM25 lookup R@1 {_r_at_1(bm25['lookup'])} (file level, pooled), "
              f"multi_file R@1 {_r_at_1(bm25['multi_file'])}")
    else:
        print(f"ragsweep: warning: BM25 self-report not measured: {bm25.get('reason')}", file=sys.stderr)
    nd = report["near_duplicates"]
    print(f"near-duplicate rate {nd['rate']:.4f} (word-{nd['shingle_words']}-gram Jaccard >= {nd['threshold']}); "
          f"self-report in {written.out}/selfreport.md")


def _r_at_1(report: dict[str, Any]) -> str:
    """A class's pooled R@1; a selection can keep no query of a class, and then there is none."""
    value = report["pooled"]["r_at_1"]
    return "n/a (no queries)" if value is None else f"{value:.4f}"
