"""Where arms put their artefacts: the layout of a sweep in an artefact store (harness.objectstore).

Layout (keys are ``/``-separated on every store)::

    sweeps/<sweep_id>/<family>/<arm>/metrics.json
                                    /metrics.md
                                    /per_query.json
                                    /runinfo.json
                                    /complete.json     written last: the arm's set is complete
                                    /failed.json       written by the executor when the arm failed
    sweeps/<sweep_id>/comparison.json | comparison.md | comparison.png

Puts are atomic (harness.objectstore). An arm's set is complete only when ``complete.json`` names
the config hash asked about and the sha256 of each of the four files, so a re-run that died half
way through rewriting them (old marker, new files) reads as incomplete rather than as a mixed result.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, cast

from harness.errors import UsageError
from harness.inputfiles import parse_json_input, validate_input
from harness.objectstore import (
    ArtefactStore,
    LocalFolderStore,
    MissingArtefactError,
    S3Store,
    StorageError,
    check_key,
    is_transient_s3_error,
    open_store,
    retry_transient,
)
from harness.sweep.catalogue import Arm
from harness.sweep.markers import COMPLETE_SCHEMA, FAILED_SCHEMA, CompleteMarker, FailedMarker

__all__ = ["ARM_EXTRA_FILES", "ARM_FILES", "ArtefactStore", "LocalFolderStore", "MissingArtefactError", "S3Store",
           "StorageError", "arm_key", "arm_prefix", "check_key", "incomplete_reason", "is_complete",
           "is_transient_s3_error", "open_store", "publish_arm", "publish_failure", "read_complete_marker",
           "read_failure", "retry_transient", "sha256_text", "sweep_prefix"]

ARM_FILES: tuple[str, ...] = ("metrics.json", "metrics.md", "per_query.json", "runinfo.json")
# Published beside them when the arm wrote them (jobs.arm does): the run and qrels in trec_eval's
# formats, so `ragsweep score` can re-score an arm and two sweeps' runs can be compared byte for
# byte, and the aggregation answers. complete.json records each one that was published.
ARM_EXTRA_FILES: tuple[str, ...] = ("run.trec", "qrels.trec", "answers.md")
COMPLETE_MARKER = "complete.json"
FAILED_MARKER = "failed.json"


def sweep_prefix(sweep_id: str) -> str:
    check_key(sweep_id)
    if "/" in sweep_id:
        raise UsageError(f"sweep id {sweep_id!r} must be a single key segment")
    return f"sweeps/{sweep_id}"


def arm_prefix(sweep_id: str, arm: Arm) -> str:
    return f"{sweep_prefix(sweep_id)}/{arm.family}/{arm.name}"


def arm_key(sweep_id: str, arm: Arm, name: str) -> str:
    return check_key(f"{arm_prefix(sweep_id, arm)}/{name}")


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- an arm's artefact set -----------------------------------------------------------------------

def _marker(store: ArtefactStore, key: str, model: type[CompleteMarker | FailedMarker]) -> dict[str, Any] | None:
    """The marker as written, once it fits ``model`` (exit 4 naming the key and the field)."""
    try:
        text = store.get_text(key)
    except MissingArtefactError:
        return None
    where = f"{store.describe()}: {key}"
    doc = parse_json_input(text, where)
    validate_input(model, doc, where)
    return cast(dict[str, Any], doc)


def read_complete_marker(store: ArtefactStore, sweep_id: str, arm: Arm) -> dict[str, Any] | None:
    return _marker(store, arm_key(sweep_id, arm, COMPLETE_MARKER), CompleteMarker)


def read_failure(store: ArtefactStore, sweep_id: str, arm: Arm) -> dict[str, Any] | None:
    return _marker(store, arm_key(sweep_id, arm, FAILED_MARKER), FailedMarker)


def incomplete_reason(store: ArtefactStore, sweep_id: str, arm: Arm, config_hash: str) -> str | None:
    """None when the arm's set is complete for ``config_hash``; otherwise why it is not."""
    marker = read_complete_marker(store, sweep_id, arm)
    if marker is None:
        return "no complete.json"
    if marker.get("config_hash") != config_hash:
        return (f"complete.json is for config {str(marker.get('config_hash'))[:12]}, not {config_hash[:12]} "
                "(the arm's config or the corpus state changed since it was measured)")
    recorded = marker["files"]
    for name in (*ARM_FILES, *(n for n in ARM_EXTRA_FILES if n in recorded)):
        try:
            text = store.get_text(arm_key(sweep_id, arm, name))
        except MissingArtefactError:
            return f"{name} is missing"
        if recorded.get(name) != sha256_text(text):
            return f"{name} does not match the sha256 in complete.json (a re-run stopped half way)"
    return None


def is_complete(store: ArtefactStore, sweep_id: str, arm: Arm, config_hash: str) -> bool:
    return incomplete_reason(store, sweep_id, arm, config_hash) is None


def publish_arm(store: ArtefactStore, sweep_id: str, arm: Arm, config_hash: str, files: Mapping[str, str], *,
                state_identity: str | None = None, state_measured: str | None = None) -> None:
    """Write the four artefacts (and any of ARM_EXTRA_FILES given), then ``complete.json``
    (their sha256s, the config hash and the measurement identity ``state_measured``) last."""
    missing = [name for name in ARM_FILES if name not in files]
    extra = sorted(set(files) - set(ARM_FILES) - set(ARM_EXTRA_FILES))
    if missing or extra:
        raise UsageError(f"arm {arm.name}: an artefact set is {', '.join(ARM_FILES)} (and optionally "
                         f"{', '.join(ARM_EXTRA_FILES)}); missing {', '.join(missing) or 'none'}, unexpected "
                         f"{', '.join(extra) or 'none'}")
    names = [*ARM_FILES, *(n for n in ARM_EXTRA_FILES if n in files)]
    for name in names:
        store.put_text(arm_key(sweep_id, arm, name), files[name])
    marker = {
        "schema": COMPLETE_SCHEMA,
        "arm": arm.name,
        "family": arm.family,
        "config": arm.resolved_config(),
        "config_hash": config_hash,
        "state_identity": state_identity,
        "files": {name: sha256_text(files[name]) for name in names},
        **({} if state_measured is None else {"state_measured": state_measured}),
    }
    CompleteMarker.model_validate(marker)
    store.put_text(arm_key(sweep_id, arm, COMPLETE_MARKER), json.dumps(marker, indent=2, sort_keys=True) + "\n")


def publish_failure(store: ArtefactStore, sweep_id: str, arm: Arm, config_hash: str, error: str) -> None:
    """The executor's record that an arm ran and failed (the collector lists it by name). The arm's older
    complete.json goes first: an arm whose last attempt failed reads as failed, never as its older result."""
    marker = {"schema": FAILED_SCHEMA, "arm": arm.name, "family": arm.family, "config_hash": config_hash,
              "error": error}
    FailedMarker.model_validate(marker)
    store.delete(arm_key(sweep_id, arm, COMPLETE_MARKER))
    store.put_text(arm_key(sweep_id, arm, FAILED_MARKER), json.dumps(marker, indent=2, sort_keys=True) + "\n")
