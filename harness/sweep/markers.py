"""The markers the sweep writes beside an arm's artefacts: complete.json and failed.json.

``storage.publish_arm`` writes ``complete.json`` last (the config hash and the sha256 of each
file it published); the executor writes ``failed.json`` when an arm failed. These are their
models; ``storage`` checks what it writes against them and reads both back through them, so
the collector, the executors and ``sweep.results`` rely on the same fields.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr

COMPLETE_SCHEMA = "ragsweep.complete/1"
FAILED_SCHEMA = "ragsweep.failed/1"


class _Marker(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    arm: StrictStr
    family: StrictStr
    config_hash: StrictStr


class CompleteMarker(_Marker):
    """complete.json: the arm's set is complete for ``config_hash``, file name -> sha256."""

    schema_: Literal["ragsweep.complete/1"] = Field(alias="schema")
    config: dict[str, Any]
    state_identity: StrictStr | None
    state_measured: StrictStr | None = None  # the state's measurement identity (harness.sweep.measured)
    files: dict[str, StrictStr]


class FailedMarker(_Marker):
    """failed.json: the arm ran for ``config_hash`` and failed; ``error`` says why in one line."""

    schema_: Literal["ragsweep.failed/1"] = Field(alias="schema")
    error: StrictStr
