"""``ragsweep cache``: the team's embedding cache (harness.index.teamtier) reported and verified.

    ragsweep cache stats  [--team-cache SPEC] [--state DIR ...]   size per model, and where states' vectors came from
    ragsweep cache verify [--team-cache SPEC] [--set-aside]       every entry checked as a build checks it
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("cache", help="the team's embedding cache: its size and hit rate, or verify it")
    sub = p.add_subparsers(dest="cache_command", metavar="ACTION", required=True)
    for name, what in (("stats", "entries, texts and bytes per model, the numerical paths that encoded them, and "
                                 "for each --state where its vectors came from (the team's hit rate)"),
                       ("verify", "read every entry and check it as a build does (record, sizes, sha256s, finite "
                                  "unit rows); exit 5 naming the bad ones")):
        s = sub.add_parser(name, help=what)
        s.add_argument("--team-cache", default=None, metavar="s3://BUCKET[/PREFIX]|DIR",
                       help="the team's cache (default RAGSWEEP_TEAM_CACHE; its endpoint "
                            "RAGSWEEP_TEAM_CACHE_ENDPOINT, else RAGSWEEP_S3_ENDPOINT)")
        s.add_argument("--json", action="store_true", help="print the report as JSON")
        if name == "stats":
            s.add_argument("--state", action="append", default=[], type=Path, metavar="DIR",
                           help="a built state: its build.json says how many vectors came from the team's cache")
        else:
            s.add_argument("--set-aside", action="store_true",
                           help="move each bad entry to corrupt/ (as a build that meets it does)")
        s.set_defaults(func=run)


def _tier(args: argparse.Namespace) -> Any:
    from harness.commands.state import team_cache_spec
    from harness.errors import UsageError
    from harness.index.teamtier import SharedTier
    from harness.settings import settings

    spec, endpoint = team_cache_spec(args.team_cache, settings())
    tier = SharedTier.from_spec(spec, endpoint)
    if tier is None:
        raise UsageError("no team cache named: give --team-cache s3://BUCKET[/PREFIX] (or a folder), or set "
                         "RAGSWEEP_TEAM_CACHE")
    return tier


def _state_rates(states: list[Path]) -> list[dict[str, Any]]:
    from harness.errors import InputDataError
    from harness.inputfiles import read_json_input

    out = []
    for state in states:
        build = read_json_input(state / "build.json")
        vectors = build.get("vectors") if isinstance(build, dict) else None
        if not isinstance(vectors, list):
            raise InputDataError(f"{state / 'build.json'}: no vectors record (built before the team's cache was "
                                 "recorded); rebuild the state to see where its vectors came from")
        team = sum(int(v.get("from_team", 0)) for v in vectors)
        machine = sum(int(v.get("from_machine", 0)) for v in vectors)
        encoded = sum(int(v.get("encoded", 0)) for v in vectors)
        total = team + machine + encoded
        out.append({"state": str(state), "from_team": team, "from_machine": machine, "encoded": encoded,
                    "team_hit_rate": round(team / total, 4) if total else None,
                    "team_cache": sorted({str(v.get("team_cache")) for v in vectors}),
                    "unreachable": sorted({str(v["team_cache_unreachable"]) for v in vectors
                                           if v.get("team_cache_unreachable")})})
    return out


def run(args: argparse.Namespace) -> int:
    from harness.errors import IntegrityError
    from harness.index.teamtier import survey

    tier = _tier(args)
    verify = args.cache_command == "verify"
    report = survey(tier, check=verify)
    states = _state_rates(args.state) if not verify else []
    bad = [b for row in report for b in row["bad"]]
    if verify and args.set_aside:
        for b in bad:
            folder, _, file = b["entry"].rpartition("/")
            name = file[:-len(".shard")]
            data = tier.get(folder, name)
            if data is not None:
                tier.set_aside(folder, name, data)
    if args.json:
        print(json.dumps({"team_cache": tier.describe(), "folders": report, "states": states}, indent=2,
                         sort_keys=True))
    else:
        print(f"team cache {tier.describe()}: {len(report)} model folder(s)")
        for row in report:
            print(f"  {row['folder']} ({row['model']}): {row['entries']} entries, {row['texts']} texts, "
                  f"{row['bytes'] / 1e6:.1f} MB")
            for path, n in sorted(row["encoded_by"].items()):
                print(f"    encoded by {path}: {n} texts")
        for s in states:
            rate = "n/a" if s["team_hit_rate"] is None else f"{100 * s['team_hit_rate']:.1f}%"
            print(f"  state {s['state']}: {s['from_team']} vectors from the team's cache, {s['from_machine']} from "
                  f"the machine's, {s['encoded']} encoded (team hit rate {rate})"
                  + (f"; the team's cache was unreachable: {s['unreachable'][0]}" if s["unreachable"] else ""))
        if verify:
            checked = sum(row["entries"] for row in report)
            print(f"  verified {checked} entries: {len(bad)} bad" + (" (moved to corrupt/)" if bad and args.set_aside
                                                                        else ""))
            for b in bad:
                print(f"    {b['entry']}: {b['why']}")
    if bad:
        raise IntegrityError(f"{tier.describe()}: {len(bad)} bad entr{'y' if len(bad) == 1 else 'ies'} (first "
                             f"{bad[0]['entry']}: {bad[0]['why']})"
                             + ("; moved to corrupt/" if args.set_aside else "; --set-aside moves them"))
    return 0
