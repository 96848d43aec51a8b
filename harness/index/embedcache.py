"""The embedding cache: vectors keyed by (model, sha256 of the embedding text), shared by every state.

A build encodes only texts no earlier build on the machine encoded with the same model.
Layout under the cache root (default ``$RAGSWEEP_MACHINE_CACHE/embeddings``, harness.machinecache)::

    <model folder>/            one per model key: ``{identity}-{sha256(model key)[:16]}``
        model.json             the model key: identity, dimension, the model's describe() less its spec
        .lock                  fcntl.flock for writers (readers need none)
        00000001-<hex>.keys    rows x 32 bytes: sha256 of each text's UTF-8
        00000001-<hex>.vec     rows x dimension little-endian float32: the bytes the model returned
        00000001-<hex>.json    the shard record, written last: rows, dimension, model key, sha256 of both

A shard is immutable and becomes visible only when its record is renamed into place (temp
file + os.replace), after both data files; so a reader never sees half a shard and needs
no lock. A shard whose files do not match their record (size or sha256), or whose vectors are not
finite unit vectors (a digest recorded over bad vectors), is never used: it is set aside
(``.json.corrupt``) with a one-line warning and its texts are encoded again. Nothing bad gets in
either: a piece's vectors are checked (shape, finite, unit norm) before its files are written, and an
encode that gave NaN fails the build naming the text (harness.index.embed.check_encoded).

Determinism. The cache changes no vector: the embedders it wraps in a state build encode each
text independently of its batch-mates (harness.index.encoder), so a cached vector is the one
the model gives that text in any build, and a cold build, a warm rebuild and a build without
the cache write the same bytes. The encoder's rule (rows per forward pass, torch, the CPU's
kernels) is part of the model key, so vectors computed under another rule are never read.
Texts missing from the cache are encoded sorted and unique, under the writer lock (two
concurrent builds never both encode a text), and committed a piece (``piece``, 4096 texts) at
a time as a shard, so an interrupted build resumes where it stopped.

A team's tier of vectors under this cache, shared by machines with other CPUs: harness.index.teamcache.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import UsageError
from harness.index.embed import Embedder, bad_rows, check_encoded, encode_pieces
from harness.index.encoder import numerical_path, without_numerical_path
from harness.objectstore import write_atomic

CACHE_SCHEMA = "ragsweep.embedcache/1"
ENCODE_PIECE = 4096
_KEY_BYTES = 32
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")

Progress = Callable[[int, int], None]


def text_key(text: str) -> bytes:
    """The cache key of one embedding text: sha256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).digest()


def model_key(embedder: Embedder) -> dict[str, Any]:
    """What makes two embedders' vectors interchangeable: identity (weights digest), dimension and,
    where the embedder describes itself, everything else it says (max_seq_length, normalised, the
    encoder's rule) except its spec, which is only where the weights were found."""
    key: dict[str, Any] = {"identity": embedder.identity, "dimension": int(embedder.dimension)}
    describe = getattr(embedder, "describe", None)
    if callable(describe):
        key.update({k: v for k, v in describe().items() if k != "spec"})
    return key


def contract_key(key: dict[str, Any]) -> dict[str, Any]:
    """The model key less the numerical path (torch's version, the CPU's kernels): what a team shares vectors
    under (harness.index.teamcache). Whoever encodes a text first under it defines the text's vector."""
    out = dict(key)
    if isinstance(out.get("encoder"), str):
        out["encoder"] = without_numerical_path(out["encoder"])
    return out


def model_folder_name(key: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    return f"{_UNSAFE.sub('_', str(key['identity']))[:80]}-{digest}"


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


@dataclass
class _Shard:
    name: str
    rows: int
    keys: list[bytes]
    vectors_sha256: str
    encoded_by: dict[str, Any] | None = None
    verified: bool = False
    matrix: np.ndarray | None = None


class CachingEmbedder:
    """An :class:`~harness.index.embed.Embedder` that answers from the cache and encodes only misses."""

    def __init__(self, inner: Embedder, root: Path, *, piece: int = ENCODE_PIECE,
                 warn: Callable[[str], None] = _warn) -> None:
        if piece < 1:
            raise UsageError(f"embedding cache piece {piece}: expected at least 1")
        self.inner = inner
        self.identity = inner.identity
        self.dimension = int(inner.dimension)
        self.machine_key = model_key(inner)
        self.root = Path(root)
        self.piece = piece
        self._warn = warn
        self.hits = 0  # distinct texts this wrapper found in the machine's cache
        self.from_shared = 0  # distinct texts read from the team's tier (and kept in the machine's cache)
        self.encoded = 0  # distinct texts this wrapper encoded and added
        self.encoded_by: dict[str, int] = {}  # the numerical path (JSON) that computed each text asked for
        self._counted: set[bytes] = set()
        self._use(*self._where())

    def _where(self) -> tuple[dict[str, Any], Path]:
        """The key and folder answered from: this machine's vectors, under its numerical path."""
        return self.machine_key, self.root / model_folder_name(self.machine_key)

    def _use(self, key: dict[str, Any], folder: Path) -> None:
        """Answer from ``folder``: this machine's vectors (its numerical path in ``key``), or the team's mirror."""
        self.key = key
        self.folder = folder
        self._shards: dict[str, _Shard] = {}
        self._set_aside: set[str] = set()
        self._index: dict[bytes, tuple[str, int]] = {}
        self.folder.mkdir(parents=True, exist_ok=True)
        self._check_model_file()

    # -- what a state records -------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        describe = getattr(self.inner, "describe", None)
        return dict(describe()) if callable(describe) else {"identity": self.identity, "dimension": self.dimension}

    # -- the Embedder protocol --------------------------------------------------------------------
    def encode(self, texts: list[str]) -> np.ndarray:
        self.prepare(texts)
        return self.lookup(texts)

    def prepare(self, texts: Sequence[str], progress: Progress | None = None) -> None:
        """Make sure every text is cached: the misses are encoded and committed, a piece at a time (a team's
        wrapper reads the team's tier first: harness.index.teamcache)."""
        wanted = {text_key(t): t for t in texts}
        missing, pulled = self._prepare(wanted, progress)
        new = [k for k in wanted if k not in self._counted]
        self.encoded += len(missing)
        self.from_shared += sum(1 for k in new if k in pulled and k not in missing)
        self.hits += sum(1 for k in new if k not in pulled and k not in missing)
        for k in new:
            by = self._shards[self._index[k][0]].encoded_by
            label = json.dumps(by, sort_keys=True) if by else "unrecorded"
            self.encoded_by[label] = self.encoded_by.get(label, 0) + 1
        self._counted.update(wanted)

    def provenance(self) -> dict[str, Any]:
        """Where this wrapper's vectors came from: what a state records beside its identity (build.json)."""
        return {"team_cache": None, "team_cache_unreachable": None, "machine_cache": str(self.folder),
                "from_team": self.from_shared, "from_machine": self.hits, "encoded": self.encoded,
                "encoded_by": [{"numerical_path": json.loads(k) if k != "unrecorded" else None, "texts": n}
                               for k, n in sorted(self.encoded_by.items())]}

    def _prepare(self, wanted: dict[bytes, str], progress: Progress | None) -> tuple[dict[bytes, str], set[bytes]]:
        """The texts that were missing (now encoded) and those read from a team's tier (none here)."""
        return self._prepare_machine(wanted, progress), set()

    def _prepare_machine(self, wanted: dict[bytes, str], progress: Progress | None) -> dict[bytes, str]:
        missing = self._missing(wanted)
        if missing:
            with self._lock():
                missing = self._missing(wanted)  # another build may have added them meanwhile
                self._encode(missing, progress, self._commit)
        return missing

    def _encode(self, missing: dict[bytes, str], progress: Progress | None,
                keep: Callable[[list[str], np.ndarray], None]) -> None:
        """Encode the missing texts sorted, a piece at a time, each piece handed to ``keep`` as it comes."""
        ordered = sorted(missing.values())
        done = 0
        for part, vectors in encode_pieces(self.inner, ordered, self.piece):
            keep(part, np.asarray(vectors, dtype="<f4"))
            done += len(part)
            if progress:
                progress(done, len(ordered))

    def lookup(self, texts: Sequence[str]) -> np.ndarray:
        """The cached vectors of ``texts`` (all of them must be cached), in order."""
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        by_shard: dict[str, tuple[list[int], list[int]]] = {}
        for i, text in enumerate(texts):
            where = self._index.get(text_key(text))
            if where is None:
                raise UsageError(f"{self.folder}: a text is not cached; prepare() it first")
            positions, rows = by_shard.setdefault(where[0], ([], []))
            positions.append(i)
            rows.append(where[1])
        for name, (positions, rows) in by_shard.items():
            matrix = self._shards[name].matrix
            assert matrix is not None  # _missing() verified and opened every shard it answered from
            out[positions] = matrix[rows]
        return out

    # -- reading ----------------------------------------------------------------------------------
    def _check_model_file(self) -> None:
        path = self.folder / "model.json"
        body = (json.dumps({"schema": CACHE_SCHEMA, "model": self.key}, indent=2, sort_keys=True) + "\n").encode()
        if not path.exists():
            write_atomic(path, body)
        elif path.read_bytes() != body:
            raise UsageError(f"{path}: the cache folder belongs to another model key; remove the folder")

    def _missing(self, wanted: dict[bytes, str]) -> dict[bytes, str]:
        """The wanted texts not answerable from a verified shard (new shards and corruption seen)."""
        self._refresh()
        while True:
            needed = {self._index[k][0] for k in wanted if k in self._index}
            bad = {name: why for name in sorted(needed) if (why := self._verify(self._shards[name]))}
            if not bad:
                return {k: t for k, t in wanted.items() if k not in self._index}
            for name, why in bad.items():
                self._set_aside_shard(name, why)

    def _refresh(self) -> None:
        # shard records only: not model.json, nor a temporary file a writer has not renamed yet
        records = sorted(p.name[:-len(".json")] for p in self.folder.glob("*.json") if p.name[:8].isdigit())
        changed = False
        for name in records:
            if name in self._shards or name in self._set_aside:
                continue
            try:
                shard = self._load(name)
            except FileNotFoundError:
                continue  # set aside by another build between the listing and the read
            except (OSError, ValueError, KeyError, TypeError) as e:
                self._set_aside_shard(name, str(e))
                continue
            self._shards[name] = shard
            changed = True
        if changed:
            self._reindex()

    def _load(self, name: str) -> _Shard:
        record = json.loads((self.folder / f"{name}.json").read_text(encoding="utf-8"))
        if record.get("schema") != CACHE_SCHEMA or record.get("model") != self.key:
            raise ValueError("its record names another schema or model")
        rows, dimension = int(record["rows"]), int(record["dimension"])
        if dimension != self.dimension:
            raise ValueError(f"dimension {dimension}, expected {self.dimension}")
        raw = (self.folder / f"{name}.keys").read_bytes()
        if len(raw) != rows * _KEY_BYTES or hashlib.sha256(raw).hexdigest() != record["keys_sha256"]:
            raise ValueError("its keys file does not match its size or sha256")
        size = (self.folder / f"{name}.vec").stat().st_size
        if size != rows * dimension * 4:
            raise ValueError(f"its vectors file has {size} bytes, expected {rows * dimension * 4}")
        keys = [raw[i:i + _KEY_BYTES] for i in range(0, len(raw), _KEY_BYTES)]
        by = record.get("encoded_by")
        return _Shard(name=name, rows=rows, keys=keys, vectors_sha256=str(record["vectors_sha256"]),
                      encoded_by=by if isinstance(by, dict) else None)

    def _verify(self, shard: _Shard) -> str | None:
        """Why the shard's vectors cannot be used (None: they can, and are held in memory from now on)."""
        if not shard.verified:
            path = self.folder / f"{shard.name}.vec"
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                return "its vectors file is missing"
            if len(data) != shard.rows * self.dimension * 4 or hashlib.sha256(data).hexdigest() != shard.vectors_sha256:
                return "its vectors do not match their size or sha256"
            # the bytes checked are the bytes used: a file changed after its check is never consulted
            matrix = np.frombuffer(data, dtype="<f4").reshape(shard.rows, self.dimension)
            bad = bad_rows(matrix)
            if bad.size:  # a digest recorded over bad vectors (an encoder's NaN, a forgery): never served
                return f"row {int(bad[0])} (and {bad.size - 1} more) is not a finite unit vector"
            shard.matrix = matrix
            shard.verified = True
        return None

    def _reindex(self) -> None:
        """key -> (shard, row); the first shard (in commit order) that holds a key answers for it."""
        index: dict[bytes, tuple[str, int]] = {}
        for name in sorted(self._shards):
            for row, key in enumerate(self._shards[name].keys):
                index.setdefault(key, (name, row))
        self._index = index

    def _set_aside_shard(self, name: str, why: str) -> None:
        self._warn(f"embedding cache shard {self.folder / name} is corrupt ({why}); set aside as {name}.json.corrupt, "
                   "its texts are encoded again")
        self._set_aside.add(name)
        self._shards.pop(name, None)
        record = self.folder / f"{name}.json"
        with suppress(FileNotFoundError):  # another build set it aside first
            os.replace(record, record.with_name(record.name + ".corrupt"))
        self._reindex()

    # -- writing ----------------------------------------------------------------------------------
    @contextmanager
    def _lock(self) -> Iterator[None]:
        with (self.folder / ".lock").open("a") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def _commit(self, texts: list[str], vectors: np.ndarray) -> None:
        # checked before a byte is written: an encode that gave NaN fails the build naming the text, and the
        # cache never holds it (every later build would read it back)
        vectors = check_encoded(self.identity, texts, vectors, self.dimension)
        keys = b"".join(text_key(t) for t in texts)
        data = np.ascontiguousarray(vectors, dtype="<f4").tobytes()
        seq = 1 + max((int(p.name[:8]) for p in self.folder.glob("*.json*")
                       if p.name[:8].isdigit()), default=0)
        self._write_shard(f"{seq:08d}-{hashlib.sha256(keys).hexdigest()[:12]}", keys, data, numerical_path(),
                          index=True)

    def _write_shard(self, name: str, keys: bytes, data: bytes, encoded_by: dict[str, Any] | None, *,
                     index: bool) -> None:
        """Files first, the record last (renamed into place): a reader sees the whole shard or none of it."""
        rows = len(keys) // _KEY_BYTES
        vectors_sha256 = hashlib.sha256(data).hexdigest()
        record = {"schema": CACHE_SCHEMA, "model": self.key, "rows": rows, "dimension": self.dimension,
                  "keys_sha256": hashlib.sha256(keys).hexdigest(), "vectors_sha256": vectors_sha256,
                  "encoded_by": encoded_by}
        write_atomic(self.folder / f"{name}.keys", keys)
        write_atomic(self.folder / f"{name}.vec", data)
        write_atomic(self.folder / f"{name}.json", (json.dumps(record, indent=2, sort_keys=True) + "\n").encode())
        shard = _Shard(name=name, rows=rows, keys=[keys[i:i + _KEY_BYTES] for i in range(0, len(keys), _KEY_BYTES)],
                       vectors_sha256=vectors_sha256, encoded_by=encoded_by, verified=True,
                       matrix=np.frombuffer(data, dtype="<f4").reshape(rows, self.dimension))
        self._shards[name] = shard
        if index:  # the newest shard: it answers only for keys no other holds
            for row, key in enumerate(shard.keys):
                self._index.setdefault(key, (name, row))
