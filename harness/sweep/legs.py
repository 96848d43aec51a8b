"""Which arms of a sweep share legs, and where a group's shared legs are kept in the store.

Arms of one sweep run on one state, backend and query encoder; on the embedded backend, those
whose ``legs_key`` (embedded text, fusion window, scope: harness.bench.config) has the same
embedded text and scope form a group, whose legs are fetched once at the deepest of its arms'
fusion windows and cut by each arm at its own (the embedded legs at a depth are the first hits of
deeper ones: ``prefix_legs``). On the stack with server-side fusion the legs never leave
OpenSearch (the pipeline fuses them), so each arm is a group of its own and runs as it always did.

A group's legs, when published for arms in other processes (a Kubernetes Job each), are
``sweeps/<sweep_id>/legs/<group id>/legs.json``; the group id is a hash of the state identity
(with the backend) and the legs key, so a rerun over the same state finds them again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from harness.bench.config import covers, legs_key, prefix_legs, shared_legs_key
from harness.inputfiles import parse_json_input, validate_input
from harness.objectstore import ArtefactStore
from harness.retrieval.legs import LegTable
from harness.sweep.catalogue import Arm, canonical_json
from harness.sweep.storage import sweep_prefix

GROUP_SCHEMA = "ragsweep.legs-group/1"


@dataclass(frozen=True)
class ArmGroup:
    """Arms that one fetch of legs serves, in catalogue order; ``key`` is the legs key fetched (the
    deepest of theirs; None: not shared)."""

    arms: tuple[Arm, ...]
    key: dict[str, str | int] | None

    @property
    def shared(self) -> bool:
        return self.key is not None and len(self.arms) > 1

    @property
    def name(self) -> str:
        return self.arms[0].name if len(self.arms) == 1 else f"{self.arms[0].name}+{len(self.arms) - 1}"


def arm_legs_key(arm: Arm) -> dict[str, str | int]:
    return legs_key(arm.arm_config)


def group_arms(arms: Sequence[Arm], backend: str, *, share: bool = True) -> list[ArmGroup]:
    """The sweep's arms in groups that share legs, each group where its first arm stands.

    Only the embedded backend fuses client-side over legs it fetched itself; on the stack (server-side
    fusion), and with ``share`` off, every arm is a group of one."""
    if not share or backend != "embedded":
        return [ArmGroup((arm,), None) for arm in arms]
    groups: dict[str, list[Arm]] = {}
    for arm in arms:
        key = arm_legs_key(arm)
        if prefix_legs(backend):
            key = {name: value for name, value in key.items() if name != "fusion_window"}
        groups.setdefault(canonical_json(key), []).append(arm)
    return [ArmGroup(tuple(members), group_legs_key(members, backend)) for members in groups.values()]


def group_legs_key(arms: Sequence[Arm], backend: str) -> dict[str, str | int]:
    """The legs key a group of arms fetches: the deepest of theirs (a UsageError if one fetch cannot
    serve them all)."""
    return shared_legs_key([arm_legs_key(arm) for arm in arms], backend)


def group_id(state_identity: str, key: dict[str, str | int]) -> str:
    """The store name of a group's legs: what they are true of, hashed."""
    payload = {"schema": GROUP_SCHEMA, "state": state_identity, "legs_key": key}
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()[:16]


def legs_store_key(sweep_id: str, group: str) -> str:
    return f"{sweep_prefix(sweep_id)}/legs/{group}/legs.json"


def published_legs(store: ArtefactStore, sweep_id: str, state_identity: str, group: ArmGroup,
                   arms: Sequence[Arm], backend: str) -> str | None:
    """The store key of legs already published that serve ``group``: its own, else the shallowest
    of the deeper ones the sweep's other ``arms`` fetch (on a prefix backend: the same text and
    scope over a deeper window), which a resumed sweep finds when its deepest arms are complete.
    None when none is there."""
    assert group.key is not None
    deeper = {canonical_json(k): k for k in map(arm_legs_key, arms) if k != group.key and covers(k, group.key, backend)}
    for key in (group.key, *sorted(deeper.values(), key=lambda k: int(k["fusion_window"]))):
        found = legs_store_key(sweep_id, group_id(state_identity, key))
        if store.exists(found):
            return found
    return None


def publish_legs(store: ArtefactStore, key: str, table: LegTable) -> None:
    store.put_text(key, table.to_json())


def read_legs(store: ArtefactStore, key: str) -> LegTable:
    """A published legs.json, checked against its model (a misfit is exit 4 naming the key and field)."""
    where = f"{store.describe()}: {key}"
    return validate_input(LegTable, parse_json_input(store.get_text(key), where), where)
