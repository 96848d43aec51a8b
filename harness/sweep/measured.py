"""One sweep id, one measurement: the identity check at every join of a sweep's results.

Each arm's ``complete.json`` records ``state_measured``, the measurement identity of the state it was
measured on (harness.state.verified_measurement: the state's content address without the stack's
bookkeeping), whichever backend searched it: an embedded and a stack sweep of one state are one
measurement by two backends, which ``agreement --versus`` compares. A sweep id names one measurement,
whatever name was given to it: ``sweep run`` refuses (exit 5, before anything runs) to add arms of
another measurement to a sweep that holds some, and ``sweep collect``, ``agreement``, ``bench --compare``
and the reproduction page refuse to put two measurements side by side. There is no ``--force`` to mix
them: another ``--sweep-id`` or another ``--out`` keeps both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.errors import IntegrityError
from harness.inputfiles import parse_json_input
from harness.sweep.storage import COMPLETE_MARKER, ArtefactStore, sweep_prefix

ADVICE = "a sweep id names one measurement (give another --sweep-id or another --out)"


def measured_on(marker: Mapping[str, Any]) -> str | None:
    """The measurement identity a complete.json records: ``state_measured``, or for a marker written before
    it was recorded the state part of its ``state_identity`` (``STATE[+backend:..][+reranker:..]``)."""
    recorded = marker.get("state_measured")
    if isinstance(recorded, str):
        return recorded
    identity = marker.get("state_identity")
    return identity.split("+", 1)[0] if isinstance(identity, str) and identity else None


def _arms(names: Iterable[str], shown: int = 3) -> str:
    ordered = sorted(names)
    more = f" and {len(ordered) - shown} more" if len(ordered) > shown else ""
    return ", ".join(ordered[:shown]) + more


def describe(groups: Mapping[str, Iterable[str]]) -> str:
    """``X (a, b) and Y (c)``: each identity's first 12 characters and its arms."""
    return " and ".join(f"{identity[:12]} ({_arms(arms)})" for identity, arms in sorted(groups.items()))


def stored_measurements(store: ArtefactStore, sweep_id: str) -> dict[str, list[str]]:
    """Every measurement identity the sweep's complete.json markers record -> the arms measured on it (a
    marker recording none, written before markers did, is left out)."""
    prefix = f"{sweep_prefix(sweep_id)}/"
    groups: dict[str, list[str]] = {}
    for key in store.list(prefix):
        parts = key[len(prefix):].split("/")
        if len(parts) != 3 or parts[2] != COMPLETE_MARKER:
            continue
        marker = parse_json_input(store.get_text(key), f"{store.describe()}: {key}")
        identity = measured_on(marker) if isinstance(marker, Mapping) else None
        if identity is not None:
            groups.setdefault(identity, []).append(parts[1])
    return groups


def check_sweep_measures(store: ArtefactStore, sweep_id: str, state: Path) -> None:
    """Before a run adds arms of ``state``: the sweep holds no arm measured on another measurement (exit 5)."""
    from harness.state import verified_measurement

    identity = verified_measurement(state)
    other = {k: v for k, v in stored_measurements(store, sweep_id).items() if k != identity}
    if other:
        raise IntegrityError(f"sweep {sweep_id}: it holds arms measured on {describe(other)}, this run measures "
                             f"{identity[:12]}; {ADVICE}")


def check_one_measurement(sweep_id: str, measured: Mapping[str, str | None]) -> str | None:
    """Arm name -> measurement identity (None: not recorded) of the arms about to be compared: the one
    identity they share (None when none is recorded), or exit 5 naming each and its arms."""
    groups: dict[str, list[str]] = {}
    for arm, identity in measured.items():
        if identity is not None:
            groups.setdefault(identity, []).append(arm)
    if len(groups) > 1:
        raise IntegrityError(f"sweep {sweep_id}: arms measured on {describe(groups)} cannot be compared; run each "
                             "measurement under its own sweep id")
    return next(iter(groups), None)


def check_versus(ids: tuple[str, str], first: Mapping[str, str | None], second: Mapping[str, str | None]) -> None:
    """``agreement --versus``: the two sweeps' arms (name -> measurement identity) were measured on one state
    (exit 5 otherwise; a sweep recording none, written before complete.json did, is not checked)."""
    one, two = check_one_measurement(ids[0], first), check_one_measurement(ids[1], second)
    if one is not None and two is not None and one != two:
        raise IntegrityError(f"sweeps {ids[0]} and {ids[1]} measured two states ({one[:12]} and {two[:12]}): their "
                             "arms cannot be compared; run both sweeps on one state")
