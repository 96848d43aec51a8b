"""The ledger of a reindex run: its lock, its snapshot and one outcome per file.

Keys are per run (``reindex_uuids:<run>``, ``reindex_state:<run>``), so a second
coordinator cannot write into ours; the lock is per target (``reindex_lock:<target>``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from harness.errors import RefusedError

# A live coordinator refreshes its lock with every recorded outcome; a dead one stops
# blocking the next reindex after this long (the API must never clear these keys).
LOCK_TTL_S: Final = 3600
# Snapshot and outcomes outlive the run by a day, for the post-mortem.
STATE_TTL_S: Final = 86_400


def lock_key(target: str) -> str:
    return f"reindex_lock:{target}"


def uuids_key(run_id: str) -> str:
    return f"reindex_uuids:{run_id}"


def state_key(run_id: str) -> str:
    return f"reindex_state:{run_id}"


class Ledger(Protocol):
    """Per-run bookkeeping. Keys are per run, so a second coordinator cannot write into ours."""

    def acquire(self, target: str, run_id: str) -> None:
        """Take the target's lock or raise RefusedError naming the holder."""
        ...

    def holder(self, target: str) -> str | None: ...

    def begin(self, run_id: str, target: str, file_uuids: Collection[str]) -> None:
        """Record the snapshot and the run's metadata."""
        ...

    def snapshot(self, run_id: str) -> frozenset[str] | None:
        """The recorded snapshot, or None when the run's state is gone (expired, cleared)."""
        ...

    def record(self, run_id: str, target: str, file_uuid: str, result: Mapping[str, Any]) -> None: ...

    def outcomes(self, run_id: str) -> dict[str, dict[str, Any]]: ...

    def release(self, target: str, run_id: str) -> bool:
        """Delete the lock if this run holds it."""
        ...


@dataclass
class MemoryLedger:
    """The in-process ledger of ``--dispatch eager`` (one process: TTLs do not apply)."""

    locks: dict[str, str] = field(default_factory=dict)
    snapshots: dict[str, frozenset[str]] = field(default_factory=dict)
    results: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def acquire(self, target: str, run_id: str) -> None:
        holder = self.locks.setdefault(target, run_id)
        if holder != run_id:
            raise RefusedError(f"another reindex (run {holder}) holds {lock_key(target)}; wait for it to finish")

    def holder(self, target: str) -> str | None:
        return self.locks.get(target)

    def begin(self, run_id: str, target: str, file_uuids: Collection[str]) -> None:
        self.snapshots[run_id] = frozenset(file_uuids)
        self.results[run_id] = {}

    def snapshot(self, run_id: str) -> frozenset[str] | None:
        return self.snapshots.get(run_id)

    def record(self, run_id: str, target: str, file_uuid: str, result: Mapping[str, Any]) -> None:
        self.results.setdefault(run_id, {})[file_uuid] = json.loads(json.dumps(result))

    def outcomes(self, run_id: str) -> dict[str, dict[str, Any]]:
        return dict(self.results.get(run_id, {}))

    def release(self, target: str, run_id: str) -> bool:
        if self.locks.get(target) == run_id:
            del self.locks[target]
            return True
        return False


# Record one outcome, keep the run's state alive, and refresh the lock only while this run
# holds it (a lock another run took over is never extended or deleted by us).
_RECORD_LUA: Final = """
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
if redis.call('GET', KEYS[2]) == ARGV[4] then redis.call('EXPIRE', KEYS[2], ARGV[5]) end
return 1
"""
_RELEASE_LUA: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisLedger:
    """The ledger of ``--dispatch celery``: ``reindex_lock:<target>`` (run id, TTL LOCK_TTL_S,
    SET NX), ``reindex_uuids:<run>`` (set of snapshotted file_uuids) and
    ``reindex_state:<run>`` (hash: ``meta`` and one ``file:<uuid>`` outcome per file), both
    with TTL STATE_TTL_S."""

    def __init__(self, client: Any, *, lock_ttl_s: int = LOCK_TTL_S, state_ttl_s: int = STATE_TTL_S) -> None:
        self.client = client
        self.lock_ttl_s = lock_ttl_s
        self.state_ttl_s = state_ttl_s
        self._record = client.register_script(_RECORD_LUA)
        self._release = client.register_script(_RELEASE_LUA)

    @classmethod
    def from_url(cls, url: str, **ttls: int) -> RedisLedger:
        import redis

        return cls(redis.Redis.from_url(url, decode_responses=True), **ttls)

    def acquire(self, target: str, run_id: str) -> None:
        if not self.client.set(lock_key(target), run_id, nx=True, ex=self.lock_ttl_s):
            holder = self.client.get(lock_key(target))
            ttl = self.client.ttl(lock_key(target))
            raise RefusedError(f"another reindex (run {holder}) holds {lock_key(target)} for {ttl} s more; "
                               "wait for it to finish (a dead coordinator's lock expires by itself)")

    def holder(self, target: str) -> str | None:
        value = self.client.get(lock_key(target))
        return None if value is None else str(value)

    def begin(self, run_id: str, target: str, file_uuids: Collection[str]) -> None:
        meta = json.dumps({"target": target, "snapshot": len(file_uuids)}, sort_keys=True)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.delete(uuids_key(run_id), state_key(run_id))
            if file_uuids:
                pipe.sadd(uuids_key(run_id), *sorted(file_uuids))
                pipe.expire(uuids_key(run_id), self.state_ttl_s)
            pipe.hset(state_key(run_id), "meta", meta)
            pipe.expire(state_key(run_id), self.state_ttl_s)
            pipe.execute()

    def snapshot(self, run_id: str) -> frozenset[str] | None:
        meta = self.client.hget(state_key(run_id), "meta")
        if meta is None:
            return None
        members = frozenset(str(u) for u in self.client.smembers(uuids_key(run_id)))
        # an empty snapshot has no set in Redis; a non-empty one whose set expired is gone
        return members if len(members) == json.loads(meta)["snapshot"] else None

    def record(self, run_id: str, target: str, file_uuid: str, result: Mapping[str, Any]) -> None:
        self._record(keys=[state_key(run_id), lock_key(target)],
                     args=[f"file:{file_uuid}", json.dumps(result, sort_keys=True), self.state_ttl_s, run_id,
                           self.lock_ttl_s])

    def outcomes(self, run_id: str) -> dict[str, dict[str, Any]]:
        raw = self.client.hgetall(state_key(run_id))
        return {k[len("file:"):]: json.loads(v) for k, v in raw.items() if k.startswith("file:")}

    def release(self, target: str, run_id: str) -> bool:
        return bool(self._release(keys=[lock_key(target)], args=[run_id]))
