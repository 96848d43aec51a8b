"""A team's embedding cache: the machine's cache (harness.index.embedcache) over the team's tier
(harness.index.teamtier), so machines whose CPUs would give other last bits build states with one identity.

A :class:`TeamCachingEmbedder` keys on the *contract* (the model key less the numerical path:
harness.index.embedcache.contract_key) and keeps a mirror of the tier under ``<root>/team/<contract
folder>``. A text is answered from the mirror; else from the tier's entries (each checked, then
mirrored); else it is encoded here and published, a piece at a time: an entry someone else published
first under the same name is read back and its vectors used. Whoever encodes a text first defines its
vector for everyone. The mirror's shards are named ``00000000-<entry name>`` and answer in name order,
as on every machine that sees the same entries. Two machines that fill an empty tier at once with other
texts can both publish a text in differently composed entries; name order then picks one for every reader
that sees both, and a reader that saw only one before the other arrived keeps its vector in its mirror
(docs/embedding-cache.md, "The team's cache": what is guaranteed).

A tier that cannot be reached (or refuses a request) costs one warning: the wrapper then answers from the
machine's own cache and encodes as without a tier, so the build completes with this machine's vectors
(:meth:`provenance` says so). A bad entry is refused by name, moved to ``corrupt/`` and re-encoded.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import StorageError
from harness.index.embed import Embedder, check_encoded
from harness.index.embedcache import (
    ENCODE_PIECE,
    CachingEmbedder,
    Progress,
    _warn,
    contract_key,
    model_folder_name,
    text_key,
)
from harness.index.encoder import numerical_path
from harness.index.teamtier import BadEntry, SharedTier, pack, unpack

TEAM_LOCAL = "00000000-"  # a team entry's local shard name: this prefix and the entry's name (keys sha256)


def caching(inner: Embedder, root: Path, team: tuple[str | None, str | None] = (None, None),
            **kwargs: Any) -> CachingEmbedder:
    """``inner`` behind the machine's cache at ``root``, and the team's tier ``team`` (spec, endpoint) when on."""
    tier = SharedTier.from_spec(*team)
    return CachingEmbedder(inner, root, **kwargs) if tier is None else TeamCachingEmbedder(inner, root, tier, **kwargs)


def team_encoder(inner: Embedder, root: Path | None, team: tuple[str | None, str | None]) -> Embedder:
    """What encodes queries: ``inner`` behind the team's cache when there is one (and a machine cache for its
    mirror), so two machines' arms score the team's bits; else ``inner`` itself (a machine's queries are
    encoded batch-independently: the same bits with or without its own cache)."""
    if root is None or SharedTier.from_spec(*team) is None:
        return inner
    return caching(inner, root, team)


class TeamCachingEmbedder(CachingEmbedder):
    """The machine's cache as a mirror of the team's tier (harness.index.embedcache.CachingEmbedder's protocol)."""

    def __init__(self, inner: Embedder, root: Path, tier: SharedTier, *, piece: int = ENCODE_PIECE,
                 warn: Callable[[str], None] = _warn) -> None:
        self.tier = tier
        self.fell_back: str | None = None  # why the team's tier was not used (it could not be reached)
        self._refused: set[str] = set()  # team entries refused by this wrapper
        super().__init__(inner, root, piece=piece, warn=warn)

    def _where(self) -> tuple[dict[str, Any], Path]:
        contract = contract_key(self.machine_key)
        return contract, self.root / "team" / model_folder_name(contract)

    def provenance(self) -> dict[str, Any]:
        out = super().provenance()
        out["team_cache"] = self.tier.describe()
        out["team_cache_unreachable"] = self.fell_back
        return out

    def _prepare(self, wanted: dict[bytes, str], progress: Progress | None) -> tuple[dict[bytes, str], set[bytes]]:
        if self.fell_back is not None:
            return super()._prepare(wanted, progress)
        try:
            return self._prepare_team(wanted, progress)
        except StorageError as e:
            self._fall_back(e)
            return super()._prepare(wanted, progress)

    def _prepare_team(self, wanted: dict[bytes, str],
                      progress: Progress | None) -> tuple[dict[bytes, str], set[bytes]]:
        """The machine's mirror of the team's tier, then the tier's entries it lacks, then encoding (each piece
        published: the first writer of an entry defines it for everyone, the second reads it back)."""
        missing = self._missing(wanted)
        if not missing:
            return missing, set()
        self.tier.ensure_model(self._team_folder, self.key)
        known = set(self._index)
        self._pull()
        missing = self._missing(wanted)
        pulled = {k for k in wanted if k in self._index and k not in known}
        if missing:
            with self._lock():
                self._pull()  # another process of this machine may have mirrored them meanwhile
                missing = self._missing(wanted)
                self._encode(missing, progress, self._publish)
                self._reindex()  # entries answer in name order, as on every machine that sees the same entries
        return missing, pulled

    @property
    def _team_folder(self) -> str:
        return self.folder.name

    def _pull(self) -> None:
        """Mirror every entry of the team's folder this machine lacks, each checked before it is kept."""
        added = False
        for name in self.tier.names(self._team_folder):
            local = TEAM_LOCAL + name
            if local in self._shards or local in self._set_aside or local in self._refused:
                continue
            if (self.folder / f"{local}.json").exists():
                self._refresh()  # mirrored by another process of this machine
                if local in self._shards:
                    continue
            data = self.tier.get(self._team_folder, name)
            if data is None:
                continue  # set aside by another reader between the listing and the read
            try:
                entry = unpack(name, data, self.key, self.dimension)
            except BadEntry as e:
                self._refuse(name, data, str(e))
                continue
            self._write_shard(local, entry.keys, entry.vectors, entry.record.get("encoded_by"), index=False)
            added = True
        if added:
            self._reindex()

    def _refuse(self, name: str, data: bytes, why: str) -> None:
        self._warn(f"team embedding cache entry {self.tier.describe()}/{self._team_folder}/{name}.shard refused "
                   f"({why}); moved to corrupt/, its texts are encoded again")
        self._refused.add(TEAM_LOCAL + name)
        with suppress(StorageError):
            self.tier.set_aside(self._team_folder, name, data)

    def _publish(self, texts: list[str], vectors: np.ndarray) -> None:
        vectors = check_encoded(self.identity, texts, vectors, self.dimension)
        keys = b"".join(text_key(t) for t in texts)
        data = np.ascontiguousarray(vectors, dtype="<f4").tobytes()
        by = numerical_path()
        name, blob = pack(self.key, keys, data, self.dimension, by)
        if not self.tier.publish(self._team_folder, name, blob):
            theirs = self.tier.get(self._team_folder, name)
            try:
                if theirs is None:
                    raise BadEntry("it vanished after it was found")
                entry = unpack(name, theirs, self.key, self.dimension)
                data, by = entry.vectors, entry.record.get("encoded_by")  # the first writer's vectors
            except BadEntry as e:
                self._refuse(name, theirs or b"", str(e))
                self.tier.publish(self._team_folder, name, blob)
        self._write_shard(TEAM_LOCAL + name, keys, data, by, index=False)

    def _fall_back(self, error: StorageError) -> None:
        """The team's tier cannot be reached: one line, then this machine's own cache and encoding, as without
        a tier (the vectors this machine computes; another numerical path may give another state identity)."""
        self.fell_back = str(error)
        self._warn(f"team embedding cache {self.tier.describe()} not used ({error}); encoding on this machine, "
                   "its vectors may differ in the last bits from the team's (another state identity)")
        self._use(self.machine_key, self.root / model_folder_name(self.machine_key))
