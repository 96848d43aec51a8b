"""The arm catalogue as data: families of arms, each arm one ``ragsweep bench`` invocation.

An arm is ``{name, family, axis, config}``. ``config`` holds bench flags by their argparse
dest names (``candidate_pool`` is ``--candidate-pool``); an absent key is bench's default,
and ``arm_argv`` emits a flag only for the keys an arm spells, so the control of the fusion
family really runs with no ``--fusion`` flag at all. A family names its control arm; every
other arm's delta is taken against it and nothing else.

The built-in catalogue reproduces the methodology's Stage 5 arms (ten fusion, nine budget,
five candidate-pool) and adds two families it could not measure: ``diversity`` (the
decomposition of the reranker's loss into selection and diversity) and ``embedding``
(header vs body embedded text). ``emit_manifest`` prints it as JSON in the one shape that
``load_manifest`` reads back (:mod:`harness.sweep.manifest`), so a new arm is a manifest line,
not a code edit.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError

from harness.bench.arm import ARM_KEYS, DEFAULTS, INT_KEYS, ArmConfig
from harness.errors import UsageError
from harness.sweep.gatespec import DEFAULT_GATE, GateSpec

MANIFEST_SCHEMA = "ragsweep.catalogue/1"
CONFIG_HASH_SCHEMA = "ragsweep.arm-config/1"
# A name becomes one segment of a storage key, so it is restricted to what every store accepts.
NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,99}$"

# The arm configuration is harness.bench.arm.ArmConfig: bench's flags are generated from it and
# every arm's config validates into it, so its defaults are the one place they are written.
CONFIG_KEYS: tuple[str, ...] = ARM_KEYS
# Stages whose arms load the cross-encoder (the executor schedules them on GPU nodes).
RERANKER_STAGES = frozenset({"rerank"})
# Axes whose arms exist to check the instrument, not to be adopted: when one of them moves,
# the instrument moved, and the verdict says so.
CONTROL_AXES = frozenset({"flag-inertness control", "repeatability control"})
# The catalogue holds about 60 arms; a sweep of thousands is several sweeps (and a manifest of 50,000
# arms, read whole, took minutes and gigabytes before anything said so).
MAX_ARMS = 1000


class Arm(BaseModel):
    """One bench invocation. Everything that distinguishes it is in ``config``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    family: str = Field(pattern=NAME_PATTERN)
    axis: str = Field(min_length=1)
    config: dict[str, str | int] = Field(default_factory=dict)
    # An already-measured metrics.json (``ragsweep agreement --manifest``), relative to the
    # manifest's folder. Not part of the arm's identity: config_hash ignores it.
    run: str | None = None

    # "before": pydantic's lax int would turn true into 1 before an "after" check could see it.
    @field_validator("config", mode="before")
    @classmethod
    def _known_flags(cls, config: Any) -> Any:
        if not isinstance(config, Mapping):
            return config  # pydantic names the type it expected
        for key in config:
            if key not in DEFAULTS:
                raise ValueError(f"unknown bench flag {key!r}; known: {', '.join(CONFIG_KEYS)}")
        for key, value in config.items():  # a key an arm spells is never None: a count, or a flag's string
            if key in INT_KEYS and value is None:
                raise ValueError(f"{key} must be a positive integer, got {value!r}")
            if key not in INT_KEYS and not isinstance(value, str):
                raise ValueError(f"{key} must be a string, got {value!r}")
        try:
            ArmConfig.model_validate(config)
        except PydanticValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ValueError(f"{where + ': ' if where else ''}{str(first['msg']).removeprefix('Value error, ')}") from e
        return dict(sorted(config.items()))

    @field_validator("run")
    @classmethod
    def _inside_the_manifest_folder(cls, run: str | None) -> str | None:
        if run is not None and (PurePosixPath(run).is_absolute() or ".." in PurePosixPath(run).parts):
            raise ValueError(f"{run!r} leaves the manifest's folder; give a path relative to it, without '..'")
        return run

    @property
    def stage(self) -> str:
        return str(self.resolved_config()["stage"])

    @property
    def needs_reranker(self) -> bool:
        return self.stage in RERANKER_STAGES

    @property
    def is_instrument_control(self) -> bool:
        return self.axis in CONTROL_AXES

    @property
    def arm_config(self) -> ArmConfig:
        """The arm as the one configuration model bench runs (absent keys are its defaults)."""
        return ArmConfig.model_validate(self.config)

    def resolved_config(self) -> dict[str, str | int | None]:
        """Every flag with its value: the arm's where it sets one, bench's default elsewhere."""
        return {**DEFAULTS, **self.config}


def _named_twice(names: list[str]) -> list[str]:
    return sorted(name for name, n in Counter(names).items() if n > 1)


def _raw_stage(arm: Any) -> Any:
    if isinstance(arm, Arm):
        return arm.stage
    config = arm.get("config") if isinstance(arm, dict) else None
    return config.get("stage", DEFAULTS["stage"]) if isinstance(config, dict) else DEFAULTS["stage"]


class Family(BaseModel):
    """Arms sharing one control, one stage shape and one query set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    control: str
    description: str = ""
    needs_reranker: bool = False  # derived from the arms' stages by _fill; a manifest may omit it
    arms: tuple[Arm, ...]
    # (treatment, baseline) pairs compared directly, beside every arm vs the control.
    contrasts: tuple[tuple[str, str], ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _fill(cls, data: Any) -> Any:
        """Arms inherit the family's name; ``needs_reranker`` follows from their stages."""
        if not isinstance(data, dict) or not isinstance(data.get("arms"), list | tuple):
            return data
        data = dict(data)
        family = data.get("name")
        arms: list[Any] = []
        for arm in data["arms"]:
            if isinstance(arm, dict):
                arm = dict(arm)
                arm.setdefault("family", family)
            arms.append(arm)
        data["arms"] = arms
        derived = any(_raw_stage(arm) in RERANKER_STAGES for arm in arms)
        declared = data.get("needs_reranker")
        if declared is None:
            data["needs_reranker"] = derived
        elif declared is not derived:
            raise ValueError(f"needs_reranker is {declared} but the family's arms say {derived} "
                             "(a family needs the reranker when any arm has stage rerank); drop the field")
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Family:
        names = [a.name for a in self.arms]
        duplicates = _named_twice(names)
        if duplicates:
            raise ValueError(f"arm named twice: {', '.join(duplicates)}")
        if self.control not in names:
            raise ValueError(f"control {self.control!r} is not one of the family's arms ({', '.join(names)})")
        for arm in self.arms:
            if arm.family != self.name:
                raise ValueError(f"arm {arm.name} says family {arm.family!r} inside family {self.name!r}")
        known = set(names)
        for treatment, baseline in self.contrasts:
            for name in (treatment, baseline):
                if name not in known:
                    raise ValueError(f"contrast names {name!r}, which is not an arm of the family")
        return self

    def arm(self, name: str) -> Arm:
        for arm in self.arms:
            if arm.name == name:
                return arm
        raise KeyError(name)

    @property
    def control_arm(self) -> Arm:
        return self.arm(self.control)


class Catalogue(BaseModel):
    """The manifest document: ``{"schema": ..., "families": [...], "gate": {...}}`` (no gate: the default)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_: str = Field(MANIFEST_SCHEMA, alias="schema")
    families: tuple[Family, ...]
    gate: GateSpec = DEFAULT_GATE

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, data: Any) -> Any:
        """At most MAX_ARMS arms, counted before any is validated."""
        families = data.get("families") if isinstance(data, dict) else None
        if not isinstance(families, list | tuple):
            return data  # pydantic names what it expected
        arms = sum(len(f["arms"]) for f in families if isinstance(f, dict) and isinstance(f.get("arms"), list | tuple))
        if arms > MAX_ARMS or len(families) > MAX_ARMS:
            raise ValueError(f"{len(families)} families of {arms} arms in all; a manifest holds at most {MAX_ARMS} "
                             "arms: split it into several sweeps")
        return data

    @field_validator("schema_")
    @classmethod
    def _schema(cls, value: str) -> str:
        if value != MANIFEST_SCHEMA:
            raise ValueError(f"expected {MANIFEST_SCHEMA!r}, got {value!r}")
        return value

    @model_validator(mode="after")
    def _unique(self) -> Catalogue:
        seen: dict[str, str] = {}
        for family in self.families:
            if family.name in seen:
                raise ValueError(f"family {family.name} given twice")
            seen[family.name] = family.name
        duplicates = _named_twice([a.name for f in self.families for a in f.arms])
        if duplicates:
            raise ValueError(f"arm named in two families: {', '.join(duplicates)}")
        return self

    def family(self, name: str) -> Family:
        for family in self.families:
            if family.name == name:
                return family
        raise UsageError(f"no family {name!r}; known: {', '.join(f.name for f in self.families)}")

    @property
    def arms(self) -> tuple[Arm, ...]:
        return tuple(a for f in self.families for a in f.arms)


# --- the built-in catalogue ------------------------------------------------------------------

_RETRIEVE_48: dict[str, str | int] = {"stage": "retrieve", "size": 48}


def _fusion_family() -> Family:
    def norm(technique: str, combination: str, weights: str | None = None) -> dict[str, str | int]:
        config: dict[str, str | int] = {**_RETRIEVE_48, "fusion": "normalization",
                                        "normalization_technique": technique, "combination_technique": combination}
        if weights is not None:
            config["combination_weights"] = weights
        return config

    arms = [
        ("rrf-30-default", "control", dict(_RETRIEVE_48)),
        ("rrf-30-explicit", "flag-inertness control", {**_RETRIEVE_48, "fusion": "rrf", "rank_constant": 30}),
        ("rrf-60", "rank_constant", {**_RETRIEVE_48, "fusion": "rrf", "rank_constant": 60}),
        ("norm-minmax-arith", "normalization", norm("min_max", "arithmetic_mean")),
        ("norm-minmax-geom", "combination", norm("min_max", "geometric_mean")),
        ("norm-minmax-harm", "combination", norm("min_max", "harmonic_mean")),
        ("norm-l2-arith", "normalization", norm("l2", "arithmetic_mean")),
        ("norm-zscore-arith", "normalization", norm("z_score", "arithmetic_mean")),
        ("norm-minmax-arith-w70-30", "weighting", norm("min_max", "arithmetic_mean", "0.7,0.3")),
        ("norm-minmax-arith-w30-70", "weighting", norm("min_max", "arithmetic_mean", "0.3,0.7")),
    ]
    return Family(
        name="fusion", control="rrf-30-default",
        description="fusion strategy at --stage retrieve --size 48; only the pipeline moves",
        arms=tuple(Arm(name=n, family="fusion", axis=a, config=c) for n, a, c in arms),
    )


def _rerank(pool: int, final: int, per_file: int, pairs: int = 50) -> dict[str, str | int]:
    return {"stage": "rerank", "candidate_pool": pool, "final_chunks": final,
            "max_chunks_per_file": per_file, "rerank_max_pairs": pairs}


def _budget_family() -> Family:
    arms = [
        ("budget-48-12-4", "control", _rerank(48, 12, 4)),
        ("budget-48-12-4-repeat", "repeatability control", _rerank(48, 12, 4)),
        ("budget-48-20-4", "final_chunks", _rerank(48, 20, 4)),
        ("budget-48-08-4", "final_chunks", _rerank(48, 8, 4)),
        ("budget-48-12-2", "max_chunks_per_file", _rerank(48, 12, 2)),
        ("budget-48-12-8", "max_chunks_per_file", _rerank(48, 12, 8)),
        ("budget-24-12-4", "candidate_pool", _rerank(24, 12, 4)),
        ("budget-96-12-4", "candidate_pool", _rerank(96, 12, 4)),
        ("budget-96-12-4-pairs96", "rerank_max_pairs", _rerank(96, 12, 4, pairs=96)),
    ]
    return Family(
        name="budget", control="budget-48-12-4",
        description="the shipped 48/12/4 rerank budget (candidate_pool/final_chunks/max_chunks_per_file), "
                    "one knob at a time",
        arms=tuple(Arm(name=n, family="budget", axis=a, config=c) for n, a, c in arms),
    )


def _pool_family() -> Family:
    arms = [("pool-48", "control", _rerank(48, 12, 4))]
    arms += [(f"pool-{n}", "candidate_pool", _rerank(n, 12, 4)) for n in (12, 24, 32, 96)]
    return Family(
        name="pool", control="pool-48",
        description="candidate_pool at --stage rerank, final_chunks 12 / max_chunks_per_file 4 / "
                    "rerank_max_pairs 50 held constant",
        arms=tuple(Arm(name=n, family="pool", axis=a, config=c) for n, a, c in arms),
    )


def _diversity_family() -> Family:
    arms = [
        ("retrieve-12", "control", {"stage": "retrieve", "size": 12}),
        ("retrieve-48", "fusion_window", dict(_RETRIEVE_48)),
        ("diversity-only", "diversity_sample",
         {"stage": "diversify", "candidate_pool": 48, "final_chunks": 12, "max_chunks_per_file": 4}),
        ("rerank-48-12-4", "cross-encoder", _rerank(48, 12, 4)),
    ]
    return Family(
        name="diversity", control="retrieve-12",
        description="diversity without rerank: splits the rerank stage's loss against retrieval's own top "
                    "twelve into the cross-encoder's selection and diversity_sample's interleaving",
        arms=tuple(Arm(name=n, family="diversity", axis=a, config=c) for n, a, c in arms),
        # rerank vs diversity-only: same pool, same sampler, only the cross-encoder differs.
        # diversity-only vs retrieve-48: same fusion window (size 48), only diversity_sample differs.
        contrasts=(("rerank-48-12-4", "diversity-only"), ("diversity-only", "retrieve-48")),
    )


def _embedding_family() -> Family:
    arms = [
        ("embed-header", "control", {**_RETRIEVE_48, "embedding_text": "header"}),
        ("embed-body", "embedding_text", {**_RETRIEVE_48, "embedding_text": "body"}),
    ]
    return Family(
        name="embedding", control="embed-header",
        description="embedded text with the title/date/roster header vs the chunk body alone "
                    "(needs a state built with --embedding-text both)",
        arms=tuple(Arm(name=n, family="embedding", axis=a, config=c) for n, a, c in arms),
    )


def builtin_catalogue() -> Catalogue:
    return Catalogue(families=(_fusion_family(), _budget_family(), _pool_family(), _diversity_family(),
                               _embedding_family()))


CATALOGUE = builtin_catalogue()


# --- selection, hashing, argv ----------------------------------------------------------------

def select_arms(catalogue: Catalogue, selectors: str | Iterable[str]) -> list[Arm]:
    """Arms of the named families (``"fusion"``, ``"fusion,pool"``, ``["budget"]``) or ``"all"``."""
    if isinstance(selectors, str):
        selectors = [s.strip() for s in selectors.split(",")]
    names = [s for s in selectors if s]
    if not names:
        raise UsageError("no family selected; name one of "
                         f"{', '.join(f.name for f in catalogue.families)}, or all")
    if "all" in names:
        return list(catalogue.arms)
    arms: list[Arm] = []
    for name in dict.fromkeys(names):
        arms.extend(catalogue.family(name).arms)
    return arms


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def config_hash(arm: Arm, state_identity: str) -> str:
    """sha256 of the arm's resolved config and the state it is measured on (not its name)."""
    payload = {"schema": CONFIG_HASH_SCHEMA, "config": arm.resolved_config(), "state": state_identity}
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def arm_argv(arm: Arm) -> list[str]:
    """The bench flags this arm spells, in catalogue order; absent keys stay bench's defaults."""
    argv: list[str] = []
    for key in CONFIG_KEYS:
        if key in arm.config:
            argv += [f"--{key.replace('_', '-')}", str(arm.config[key])]
    return argv


def pipeline_id(arm: Arm) -> str | None:
    """The fusion pipeline id the arm resolves to (retrieval stages only), derived as bench does."""
    pipeline: str | None = arm.arm_config.fusion_config().pipeline_id
    return pipeline
