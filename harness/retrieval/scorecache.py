"""The cross-encoder score cache: a (query, passage) pair's score kept on disk, per reranker, for every
process and every sweep on the machine.

A sweep's rerank arms ask the cross-encoder for the heads of their candidates; arms of different
leg groups (other fusion windows, so other processes) ask for many of the same pairs, and a sweep
run again asks for all of them. The reranker scores each pair in a forward pass of its own
(``harness.retrieval.rerank.PAIR_SCORING``), so a pair's score is a function of the weights, the
pair and the kernels alone: the score read here is the bits the model would give it now, and an arm
reading it writes the bytes it writes scoring every pair itself.

Layout under the cache root (default ``var/cache/rerank``)::

    <reranker folder>/     one per reranker key: ``{weights_sha256[:16]}-{sha256(key)[:16]}``
        reranker.json      the key: weights, scoring rule, max length, activation, library versions, CPU kernels
        scores.sqlite3     scores(pair BLOB PRIMARY KEY, score BLOB): sha256 of the pair, the score as
                           a little-endian float64 (Python's float: the model's float32, exactly)

SQLite in WAL mode: any number of processes read and write it at once (a writer waits for the
other's transaction, up to ``timeout``); a pair is inserted once (``INSERT OR IGNORE``: two
processes scoring the same pair wrote the same bits). Scores are committed after every call, so
an interrupted sweep keeps what it scored.

The key names everything known to decide a score's bits besides the pair. As a guard against
something it misses (a library that changes a kernel without changing its version), each process
scores the first pair it finds cached itself and refuses the cache (``IntegrityError`` naming the
folder) if the bits differ: one forward pass a process.

Scores also travel between machines (a Kubernetes scores Job to the rerank arm Jobs of its group,
harness.sweep.scores) as ``pack_scores`` records: 40 bytes a pair, the pair's 32-byte key and its
score as a little-endian float64, in key order; the receiving process puts them in its own cache
(``StoredScores.put``), where the same check applies.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import struct
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.errors import IntegrityError, UsageError
from harness.objectstore import write_atomic

CACHE_SCHEMA = "ragsweep.scorecache/1"
_LOOKUP_CHUNK = 500  # pairs per SELECT ... IN (...): under SQLite's bound-parameter limit
_RECORD = struct.Struct("<32sd")  # a packed score: the pair's key, the score


def pair_key(query: str, passage: str) -> bytes:
    """sha256 over the query's length, the query and the passage (UTF-8): no two pairs share a key."""
    q = query.encode("utf-8")
    return hashlib.sha256(len(q).to_bytes(8, "little") + q + passage.encode("utf-8")).digest()


def scorer_key(reranker_key: dict[str, Any]) -> dict[str, Any]:
    """What a cache folder, or a packed set of scores, is keyed by: the schema and the reranker's
    ``cache_key()`` (harness.retrieval.rerank): scores under two equal keys are the same bits."""
    return {"schema": CACHE_SCHEMA, **reranker_key}


def pack_scores(scores: dict[bytes, float]) -> bytes:
    """Scores by pair key as records in key order: the same scores give the same bytes."""
    return b"".join(_RECORD.pack(key, scores[key]) for key in sorted(scores))


def unpack_scores(data: bytes, where: str) -> dict[bytes, float]:
    """``pack_scores``'s records back; anything else (a torn record, keys out of order or twice) is
    refused naming ``where``."""
    if len(data) % _RECORD.size:
        raise IntegrityError(f"{where}: {len(data)} bytes of scores is not a whole number of "
                             f"{_RECORD.size}-byte records")
    scores: dict[bytes, float] = {}
    last = b""
    for key, score in _RECORD.iter_unpack(data):
        if key <= last:
            raise IntegrityError(f"{where}: score record {len(scores) + 1} is out of key order or repeated")
        scores[key] = score
        last = key
    return scores


def folder_name(key: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    return f"{str(key['weights_sha256'])[:16]}-{digest}"


def cache_root(chosen: str | Path | None) -> Path | None:
    """The cache root a flag or setting names; ``none`` (or empty) is no cache."""
    if chosen is None or str(chosen).strip().lower() in ("", "none"):
        return None
    return Path(chosen)


class StoredScores:
    """One reranker's scores on disk; safe across threads (one connection, one lock) and processes."""

    def __init__(self, root: Path, key: dict[str, Any], *, timeout: float = 300.0) -> None:
        self.key = scorer_key(key)
        self.folder = Path(root) / folder_name(self.key)
        self._lock = threading.Lock()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"cross-encoder score cache {self.folder}: cannot create it ({e.strerror}); "
                             "pass --rerank-cache DIR or none") from e
        self._check_key_file()
        path = self.folder / "scores.sqlite3"
        try:
            self._db = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS scores (pair BLOB PRIMARY KEY, score BLOB NOT NULL) "
                             "WITHOUT ROWID")
        except sqlite3.DatabaseError as e:
            raise self._unreadable(e) from e

    def _check_key_file(self) -> None:
        key_file = self.folder / "reranker.json"
        if key_file.is_file():
            try:
                theirs = json.loads(key_file.read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise IntegrityError(f"{key_file}: unreadable ({e}); delete {self.folder} to start it again") from e
            if theirs != self.key:
                raise IntegrityError(f"{key_file}: the folder holds another reranker's scores ({theirs}); "
                                     f"delete {self.folder} to start it again")
            return
        write_atomic(key_file, (json.dumps(self.key, indent=1, sort_keys=True) + "\n").encode("utf-8"))

    def _unreadable(self, e: Exception) -> IntegrityError:
        return IntegrityError(f"cross-encoder score cache {self.folder / 'scores.sqlite3'} cannot be used ({e}); "
                              f"delete {self.folder} or pass --rerank-cache none")

    def get(self, keys: Sequence[bytes]) -> dict[bytes, float]:
        """The cached scores among ``keys``."""
        found: dict[bytes, float] = {}
        with self._lock:
            try:
                for start in range(0, len(keys), _LOOKUP_CHUNK):
                    part = list(keys[start:start + _LOOKUP_CHUNK])
                    rows = self._db.execute(
                        f"SELECT pair, score FROM scores WHERE pair IN ({','.join('?' * len(part))})", part)
                    for pair, blob in rows:
                        found[bytes(pair)] = self._decode(blob)
            except sqlite3.DatabaseError as e:
                raise self._unreadable(e) from e
        return found

    def _decode(self, blob: bytes) -> float:
        if len(blob) != 8:
            raise IntegrityError(f"cross-encoder score cache {self.folder}: a score of {len(blob)} bytes, not 8; "
                                 f"delete {self.folder} to start it again")
        return float(struct.unpack("<d", blob)[0])

    def put(self, items: Iterable[tuple[bytes, float]]) -> None:
        rows = [(k, struct.pack("<d", v)) for k, v in items]
        if not rows:
            return
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany("INSERT OR IGNORE INTO scores (pair, score) VALUES (?, ?)", rows)
                self._db.execute("COMMIT")
            except sqlite3.DatabaseError as e:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise self._unreadable(e) from e

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM scores").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
