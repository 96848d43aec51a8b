"""The team's embedding cache: a shared tier of vectors under every machine's cache, in an object store.

Whoever encodes a text first defines its vector for everyone who reads the tier; nobody encodes it again,
and two machines whose CPUs would give other last bits (AVX-512 against AVX2) build states with the same
vectors, so the same identity (docs/embedding-cache.md, "The team's cache").

Where: ``RAGSWEEP_TEAM_CACHE``, an ``s3://bucket[/prefix]`` at ``RAGSWEEP_TEAM_CACHE_ENDPOINT`` (else
``RAGSWEEP_S3_ENDPOINT``; credentials from boto3's own chain: the environment, a credentials file, an
instance role, never a flag), or a folder every machine mounts; ``off`` (or unset) turns it off.

Layout under the tier::

    <contract folder>/model.json            the contract key (harness.index.embedcache.contract_key)
    <contract folder>/<keys sha256[:32]>.shard   one entry: MAGIC, a JSON record line, keys, vectors
    corrupt/<contract folder>/<name>.shard  an entry a reader refused, moved aside

An entry is addressed by the sha256 of its text keys (sha256 of each text's UTF-8, sorted as encoded),
is written once (``put_new``: a conditional PUT; the second writer of a name reads the first's) and
never changed. Its record names the contract it was encoded under, its rows, the sha256 of its keys
and of its vectors, and ``encoded_by``: the numerical path that computed it (torch, the CPU capability,
threads). A reader checks all of it (magic, record, sizes, both sha256s, finite unit rows) before one
vector is used; a bad entry is refused by name, moved to ``corrupt/`` and its texts encoded again.

The contract key is the machine cache's model key without the numerical path (torch's version, the
CPU's kernels): the weights digest, the dimension, max_seq_length, normalisation and the batching rule.
Nothing is shared across models, contracts or schemas: another of any gives another folder.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.errors import StorageError, UsageError
from harness.objectstore import ArtefactStore, LocalFolderStore, MissingArtefactError, S3Store

TEAM_SCHEMA = "ragsweep.teamcache/1"
MAGIC = f"{TEAM_SCHEMA}\n".encode()
SUFFIX = ".shard"
KEY_BYTES = 32
OFF = ("", "off", "none")
REACH_DEADLINE_S = 15.0  # how long an unreachable tier is retried before the build falls back to encoding
_MAX_RECORD = 64 * 1024


class BadEntry(ValueError):
    """An entry that must not be used: why, in one line."""


@dataclass(frozen=True)
class Entry:
    name: str
    record: dict[str, Any]
    keys: bytes
    vectors: bytes


def entry_name(keys: bytes) -> str:
    return hashlib.sha256(keys).hexdigest()[:32]


def pack(contract: Mapping[str, Any], keys: bytes, vectors: bytes, dimension: int,
         encoded_by: Mapping[str, Any] | None) -> tuple[str, bytes]:
    """One entry's name and bytes."""
    rows = len(keys) // KEY_BYTES
    if len(keys) != rows * KEY_BYTES or len(vectors) != rows * dimension * 4:
        raise UsageError(f"team cache entry: {len(keys)} key bytes and {len(vectors)} vector bytes do not make "
                         f"{rows} rows of dimension {dimension}")
    record = {"schema": TEAM_SCHEMA, "contract": dict(contract), "rows": rows, "dimension": dimension,
              "dtype": "<f4", "keys_sha256": hashlib.sha256(keys).hexdigest(),
              "vectors_sha256": hashlib.sha256(vectors).hexdigest(),
              "encoded_by": dict(encoded_by) if encoded_by else None}
    line = json.dumps(record, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    return entry_name(keys), MAGIC + line + keys + vectors


def _split(data: bytes) -> tuple[dict[str, Any], bytes]:
    """An entry's record (its schema checked) and the bytes after it; :class:`BadEntry` when there is none."""
    if not data.startswith(MAGIC):
        raise BadEntry(f"it does not start with {TEAM_SCHEMA!r}")
    end = data.find(b"\n", len(MAGIC), len(MAGIC) + _MAX_RECORD)
    if end < 0:
        raise BadEntry("its record line is missing or longer than 64 KiB")
    try:
        record = json.loads(data[len(MAGIC):end])
    except (ValueError, UnicodeDecodeError) as e:
        raise BadEntry(f"its record is not JSON ({e})") from e
    if not isinstance(record, dict) or record.get("schema") != TEAM_SCHEMA:
        raise BadEntry("its record names another schema")
    return record, data[end + 1:]


def unpack(name: str, data: bytes, contract: Mapping[str, Any], dimension: int) -> Entry:
    """The entry ``name`` holds, once every check passes; :class:`BadEntry` naming the first that fails."""
    from harness.index.embed import bad_rows

    record, body = _split(data)
    if record.get("contract") != dict(contract):
        raise BadEntry("its record names another model contract")
    rows = record.get("rows")
    if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
        raise BadEntry(f"its record's rows {rows!r} is not a positive integer")
    if record.get("dimension") != dimension or record.get("dtype") != "<f4":
        raise BadEntry(f"dimension {record.get('dimension')!r} dtype {record.get('dtype')!r}, expected {dimension} <f4")
    want = rows * KEY_BYTES + rows * dimension * 4
    if len(body) != want:
        raise BadEntry(f"{len(body)} bytes after its record, {rows} rows need {want} (truncated or padded)")
    keys, vectors = body[:rows * KEY_BYTES], body[rows * KEY_BYTES:]
    if hashlib.sha256(keys).hexdigest() != record.get("keys_sha256") or entry_name(keys) != name:
        raise BadEntry("its keys do not match their sha256 or its name")
    if hashlib.sha256(vectors).hexdigest() != record.get("vectors_sha256"):
        raise BadEntry("its vectors do not match their sha256")
    bad = bad_rows(np.frombuffer(vectors, dtype="<f4").reshape(rows, dimension))
    if bad.size:
        raise BadEntry(f"row {int(bad[0])} (and {bad.size - 1} more) is not a finite unit vector")
    return Entry(name=name, record=record, keys=keys, vectors=vectors)


class SharedTier:
    """The team's tier in an :class:`~harness.objectstore.ArtefactStore` (an S3 bucket, or a shared folder)."""

    def __init__(self, store: ArtefactStore) -> None:
        self.store = store

    @classmethod
    def from_spec(cls, spec: str | None, endpoint: str | None = None) -> SharedTier | None:
        """``s3://bucket[/prefix]``, a folder, or off (None, "", "off", "none")."""
        if spec is None or spec.strip().lower() in OFF:
            return None
        if spec.startswith("s3://"):
            bucket, _, prefix = spec[len("s3://"):].partition("/")
            if not bucket:
                raise UsageError(f"RAGSWEEP_TEAM_CACHE={spec!r}: expected s3://BUCKET[/PREFIX], a folder, or off")
            return cls(S3Store(bucket, endpoint, prefix=prefix, deadline_s=REACH_DEADLINE_S))
        if "://" in spec:
            raise UsageError(f"RAGSWEEP_TEAM_CACHE={spec!r}: expected s3://BUCKET[/PREFIX], a folder, or off")
        return cls(LocalFolderStore(spec))

    def describe(self) -> str:
        return self.store.describe()

    def ensure_model(self, folder: str, contract: Mapping[str, Any]) -> None:
        """``<folder>/model.json``: written by the first user, and the same contract for every later one."""
        body = (json.dumps({"schema": TEAM_SCHEMA, "contract": dict(contract)}, indent=2, sort_keys=True)
                + "\n").encode()
        key = f"{folder}/model.json"
        if not self.store.put_new(key, body) and self.store.get_bytes(key) != body:
            raise StorageError(f"{self.describe()}: {key} names another contract than this model's; the folder "
                               "name is the contract's digest, so the tier was written by hand")

    def names(self, folder: str) -> list[str]:
        """The entries under ``folder``, sorted (the order that decides which entry answers a text)."""
        return sorted(k[:-len(SUFFIX)] for k in (p.rsplit("/", 1)[-1] for p in self.store.list(f"{folder}/"))
                      if k.endswith(SUFFIX) and len(k) == 32 + len(SUFFIX))

    def get(self, folder: str, name: str) -> bytes | None:
        try:
            return self.store.get_bytes(f"{folder}/{name}{SUFFIX}")
        except MissingArtefactError:
            return None

    def publish(self, folder: str, name: str, data: bytes) -> bool:
        """Create the entry; False when it existed (the caller reads that one)."""
        return self.store.put_new(f"{folder}/{name}{SUFFIX}", data)

    def set_aside(self, folder: str, name: str, data: bytes) -> None:
        """Move a refused entry to ``corrupt/``, so no later reader pays for it again."""
        self.store.put_bytes(f"corrupt/{folder}/{name}{SUFFIX}", data)
        self.store.delete(f"{folder}/{name}{SUFFIX}")


def record_of(data: bytes) -> dict[str, Any] | None:
    """An entry's record, its contents unchecked (what ``ragsweep cache stats`` counts); None when there is none."""
    try:
        return _split(data)[0]
    except BadEntry:
        return None


def folders(tier: SharedTier) -> dict[str, dict[str, Any]]:
    """Each contract folder of the tier: its model.json's contract (None when unreadable)."""
    out: dict[str, dict[str, Any]] = {}
    for key in tier.store.list(""):
        folder, _, rest = key.partition("/")
        if folder == "corrupt" or not rest:
            continue
        if folder not in out:
            out[folder] = {"contract": None}
        if rest == "model.json":
            with suppress(ValueError, AttributeError):
                out[folder]["contract"] = json.loads(tier.store.get_bytes(key)).get("contract")
    return out


def survey(tier: SharedTier, *, check: bool) -> list[dict[str, Any]]:
    """Per contract folder: entries, texts, bytes, which numerical paths encoded them and, with ``check``,
    the entries that fail :func:`unpack` (name and why). Every entry is read once."""
    out = []
    for folder, info in sorted(folders(tier).items()):
        contract = info["contract"]
        row: dict[str, Any] = {"folder": folder, "model": (contract or {}).get("identity"), "entries": 0,
                               "texts": 0, "bytes": 0, "encoded_by": {}, "bad": []}
        for name in tier.names(folder):
            data = tier.get(folder, name)
            if data is None:
                continue
            row["entries"] += 1
            row["bytes"] += len(data)
            record = record_of(data) or {}
            rows = record.get("rows")
            row["texts"] += rows if isinstance(rows, int) else 0
            path = json.dumps(record.get("encoded_by"), sort_keys=True)
            row["encoded_by"][path] = row["encoded_by"].get(path, 0) + (rows if isinstance(rows, int) else 0)
            if check:
                try:
                    if not isinstance(contract, dict):
                        raise BadEntry("its folder has no readable model.json")
                    unpack(name, data, contract, int(contract.get("dimension", 0)))
                except BadEntry as e:
                    row["bad"].append({"entry": f"{folder}/{name}{SUFFIX}", "why": str(e)})
        out.append(row)
    return out
