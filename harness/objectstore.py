"""Keyed artefacts in a local folder or an S3-compatible bucket: one interface, atomic puts.

Every put is atomic: a reader sees the old object or the new one, never half of one. A folder
store writes a temporary file beside the target, fsyncs it and renames it; an S3 PUT is atomic
by the protocol. Transient failures (throttling, 5xx, dropped connections) are retried under
one deadline (harness.retries); anything else is a one-line :class:`StorageError` (exit 9).

A folder store writes through :mod:`harness.outputfiles` (write_atomic, and writing: a full or
read-only folder is the same one line).

A foundation module: the sweep's arm artefacts (harness.sweep.storage) and the ingest's
per-file shards (harness.index.ingest.sinks) are both kept through it.
"""

from __future__ import annotations

import builtins
import os
import random
import re
import stat
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from harness.errors import IntegrityError, RefusedError, UsageError, mask_secrets
from harness.errors import StorageError as StorageError  # its home was here: importers keep importing it from here
from harness.outputfiles import TEMP_PREFIX, writing
from harness.outputfiles import write_atomic as write_atomic  # its home was here: importers keep importing it
from harness.retries import RetryError, call_with_retries

_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

T = TypeVar("T")


class MissingArtefactError(IntegrityError):
    """An artefact that was asked for is not in the store."""


@runtime_checkable
class ArtefactStore(Protocol):
    """Keyed text/bytes artefacts. Puts are atomic; ``list`` returns keys in sorted order."""

    def put_bytes(self, key: str, data: bytes) -> None: ...

    def get_bytes(self, key: str) -> bytes: ...

    def put_text(self, key: str, text: str) -> None: ...

    def get_text(self, key: str) -> str: ...

    def exists(self, key: str) -> bool: ...

    def list(self, prefix: str = "") -> builtins.list[str]: ...

    def delete(self, key: str) -> None:
        """Remove one artefact; an absent one is not an error."""
        ...

    def put_new(self, key: str, data: bytes) -> bool:
        """Create ``key`` with ``data`` only if it is absent (True); False, writing nothing, if it exists.
        Two writers racing for one key: exactly one creates it, whole."""
        ...

    def describe(self) -> str: ...


def check_key(key: str) -> str:
    """A key is ``/``-joined segments of ``[A-Za-z0-9._-]``, none empty, ``.`` or ``..``."""
    parts = key.split("/")
    for part in parts:
        if not _SEGMENT.match(part):
            raise UsageError(f"storage key {key!r}: segment {part!r} is not [A-Za-z0-9][A-Za-z0-9._-]*")
    return key


# --- the local folder ----------------------------------------------------------------------------

class LocalFolderStore:
    """Artefacts as files under ``root``; a key is a relative path."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def describe(self) -> str:
        return f"folder {self.root}"

    def _path(self, key: str) -> Path:
        """The key's file, every folder and the file below ``root`` checked not to be a symbolic link:
        a link planted in the store (an arm's folder pointing outside it) is refused, never followed,
        whether the store is written or read. ``root`` itself may be a link: it is the user's choice."""
        path = self.root
        for part in check_key(key).split("/"):
            path = path / part
            try:
                is_link = stat.S_ISLNK(path.lstat().st_mode)
            except (FileNotFoundError, NotADirectoryError):
                break  # nothing below a missing name can be a link yet
            if is_link:
                raise RefusedError(f"{path}: a symbolic link in the artefact store {self.root}; refused, not "
                                   "followed (remove it, or choose another --out)")
        return self.root.joinpath(*key.split("/"))

    def put_bytes(self, key: str, data: bytes) -> None:
        target = self._path(key)
        with writing(self.root):
            target.parent.mkdir(parents=True, exist_ok=True)
            self._path(key)  # again, once the folders exist: a link made meanwhile is refused too
            write_atomic(target, data)

    def put_new(self, key: str, data: bytes) -> bool:
        """Written beside the target, then linked into place: link() fails on an existing name."""
        target = self._path(key)
        with writing(self.root):
            target.parent.mkdir(parents=True, exist_ok=True)
            self._path(key)
            tmp = target.with_name(f"{TEMP_PREFIX}{target.name}.{os.getpid()}.{random.getrandbits(32):08x}")
            try:
                write_atomic(tmp, data)
                with suppress(FileExistsError):
                    os.link(tmp, target)
                    return True
                return False
            finally:
                with suppress(FileNotFoundError):
                    tmp.unlink()

    def get_bytes(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return path.read_bytes()
        except FileNotFoundError as e:
            raise MissingArtefactError(f"{self.describe()}: no artefact {key}") from e

    def put_text(self, key: str, text: str) -> None:
        self.put_bytes(key, text.encode("utf-8"))

    def get_text(self, key: str) -> str:
        return self.get_bytes(key).decode("utf-8")

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def list(self, prefix: str = "") -> builtins.list[str]:
        if not self.root.is_dir():
            return []
        keys = []
        for dirpath, _dirnames, filenames in os.walk(self.root):
            for filename in filenames:
                if filename.startswith(TEMP_PREFIX):
                    continue
                rel = Path(dirpath, filename).relative_to(self.root).as_posix()
                if rel.startswith(prefix):
                    keys.append(rel)
        return sorted(keys)


# --- retries -------------------------------------------------------------------------------------

def retry_transient(
    call: Callable[[], T],
    *,
    is_transient: Callable[[BaseException], bool],
    what: str,
    deadline_s: float = 60.0,
    base_s: float = 0.25,
    cap_s: float = 8.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    jitter: Callable[[], float] = random.random,
) -> T:
    """Call ``call`` until it succeeds, retrying only transient errors (harness.retries, on tenacity).

    Backoff is capped exponential (``min(cap, base * 2**attempt)``), scaled by 0.5-1.0 so
    parallel arms hitting one throttled endpoint do not retry in lockstep, and it really
    sleeps. No retry starts after ``deadline_s``: the last error is raised as a StorageError
    naming the attempts. A non-transient error is raised at once, unchanged.
    """
    started = clock()
    try:
        return call_with_retries(call, is_transient=is_transient, what=what, deadline_s=deadline_s, base_s=base_s,
                                 cap_s=cap_s, sleep=sleep, clock=clock, jitter=jitter)
    except RetryError as gave_up:
        e = gave_up.last_attempt.exception()
        raise StorageError(f"{what}: still failing after {gave_up.last_attempt.attempt_number} attempts over "
                           f"{clock() - started:.1f}s (deadline {deadline_s:g}s): "
                           f"{type(e).__name__}: {e}") from e


# --- S3 ------------------------------------------------------------------------------------------

_TRANSIENT_CODES = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottled", "SlowDown",
    "TooManyRequestsException", "RequestLimitExceeded", "RequestTimeout", "RequestTimeoutException",
    "InternalError", "ServiceUnavailable", "PriorRequestNotComplete", "XMinioServerNotInitialized",
})
_MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})


def _client_error_parts(error: BaseException) -> tuple[str, int] | None:
    response = getattr(error, "response", None)
    if not isinstance(response, Mapping):
        return None
    code = str(response.get("Error", {}).get("Code", ""))
    status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return code, status


def _is_missing(error: BaseException) -> bool:
    """The key is absent. NoSuchBucket is not: a wrong bucket is a configuration error, said so."""
    parts = _client_error_parts(error)
    return parts is not None and parts[0] in _MISSING_CODES


def is_transient_s3_error(error: BaseException) -> bool:
    """Throttling, 5xx and connection-level failures; never a 4xx that retrying cannot fix."""
    from botocore import exceptions as bx

    if isinstance(error, bx.ClientError):
        parts = _client_error_parts(error)
        if parts is None:
            return False
        code, status = parts
        return code in _TRANSIENT_CODES or status == 429 or status >= 500
    return isinstance(error, bx.ConnectionError | bx.HTTPClientError)


def client_config() -> Any:
    """botocore's settings for every S3 client of ours: no retries of its own (the store's policy decides),
    path-style addressing (S3Proxy, MinIO), bounded connect and read timeouts."""
    from botocore.config import Config

    return Config(retries={"max_attempts": 1, "mode": "standard"}, s3={"addressing_style": "path"},
                  connect_timeout=10, read_timeout=60)


MULTIPART_BYTES = 16 * 1024 * 1024  # S3Store.put_bytes: the largest single PUT, and the part size above it


class S3Store:
    """Artefacts as objects in one bucket of an S3-compatible server (MinIO, SeaweedFS, AWS).

    Credentials come only from boto3's own chain (environment, shared files, instance role);
    nothing here accepts a key. boto3's own retries are off so that one policy, this module's,
    decides what is retried and for how long.
    """

    DEADLINE_S = 60.0  # how long a request is retried when no deadline_s is given

    def __init__(self, bucket: str, endpoint_url: str | None, prefix: str = "", client: Any = None, *,
                 deadline_s: float | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        if prefix:
            check_key(prefix.strip("/"))
        self.bucket = bucket
        self.endpoint_url = endpoint_url
        self.prefix = prefix.strip("/")
        self.deadline_s = self.DEADLINE_S if deadline_s is None else deadline_s
        self._sleep = sleep
        self._client = client if client is not None else self._make_client(endpoint_url)

    @staticmethod
    def _make_client(endpoint_url: str | None) -> Any:
        import boto3
        try:
            return boto3.session.Session().client("s3", endpoint_url=endpoint_url, config=client_config())
        except ValueError as e:  # botocore: "Invalid endpoint: notaurl"
            raise UsageError(f"S3 endpoint {endpoint_url!r} (--s3-endpoint or RAGSWEEP_S3_ENDPOINT): {e}; "
                             "expected a URL such as http://127.0.0.1:9000") from e

    def describe(self) -> str:
        """Where the store is, as every message names it: an endpoint's password masked (``http://me:***@host``)."""
        where = f" at {mask_secrets(self.endpoint_url)}" if self.endpoint_url else ""
        return f"s3://{self.bucket}/{self.prefix}{where}".rstrip("/")

    def _object_key(self, key: str) -> str:
        check_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def _retry(self, call: Callable[[], T], what: str, key: str | None = None) -> T:
        """Retry what is transient; a missing key becomes MissingArtefactError, any other refusal
        (403, a missing bucket, a bad endpoint) a one-line StorageError."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return retry_transient(call, is_transient=is_transient_s3_error, what=f"{self.describe()}: {what}",
                                   deadline_s=self.deadline_s, sleep=self._sleep)
        except ClientError as e:
            if key is not None and _is_missing(e):
                raise MissingArtefactError(f"{self.describe()}: no artefact {key}") from e
            raise StorageError(f"{self.describe()}: {what}: {e}") from e
        except BotoCoreError as e:  # no credentials, an unparsable endpoint, ...
            raise StorageError(f"{self.describe()}: {what}: {e}") from e

    def put_bytes(self, key: str, data: bytes) -> None:
        """One PUT up to ``MULTIPART_BYTES``; above, a multipart upload of parts that size (S3Proxy refuses a
        v4-signed single PUT over 32 MiB: MaxMessageLengthExceeded; AWS any over 5 GB). Either way the object
        appears whole or not at all: a multipart upload that fails is aborted, its parts never visible."""
        object_key = self._object_key(key)
        if len(data) <= MULTIPART_BYTES:
            self._retry(lambda: self._client.put_object(Bucket=self.bucket, Key=object_key, Body=data),
                        f"put {key}")
            return
        where = {"Bucket": self.bucket, "Key": object_key}
        upload = self._retry(lambda: self._client.create_multipart_upload(**where), f"start a multipart put {key}")
        uploaded = {**where, "UploadId": upload["UploadId"]}
        try:
            parts = []
            for number, start in enumerate(range(0, len(data), MULTIPART_BYTES), start=1):
                def put_part(n: int = number, body: bytes = data[start:start + MULTIPART_BYTES]) -> Any:
                    return self._client.upload_part(**uploaded, PartNumber=n, Body=body)

                answer = self._retry(put_part, f"put {key} part {number}")
                parts.append({"ETag": answer["ETag"], "PartNumber": number})
            self._retry(lambda: self._client.complete_multipart_upload(**uploaded, MultipartUpload={"Parts": parts}),
                        f"finish the multipart put {key}")
        except BaseException:
            with suppress(Exception):
                self._client.abort_multipart_upload(**uploaded)
            raise

    def put_new(self, key: str, data: bytes) -> bool:
        """A conditional PUT (``If-None-Match: *``; AWS, MinIO, S3Proxy 4): 412 is another writer's object."""
        from botocore.exceptions import ClientError

        if len(data) > MULTIPART_BYTES:
            raise UsageError(f"{self.describe()}: put_new {key}: {len(data)} bytes, at most {MULTIPART_BYTES}")

        def put() -> bool:
            try:
                self._client.put_object(Bucket=self.bucket, Key=self._object_key(key), Body=data, IfNoneMatch="*")
            except ClientError as e:
                if (_client_error_parts(e) or ("", 0))[1] in (409, 412):  # PreconditionFailed, a racing write
                    return False
                raise
            return True

        return self._retry(put, f"put {key} (if absent)")

    def get_bytes(self, key: str) -> bytes:
        object_key = self._object_key(key)

        def get() -> bytes:
            response = self._client.get_object(Bucket=self.bucket, Key=object_key)
            return bytes(response["Body"].read())

        return self._retry(get, f"get {key}", key=key)

    def put_text(self, key: str, text: str) -> None:
        self.put_bytes(key, text.encode("utf-8"))

    def get_text(self, key: str) -> str:
        return self.get_bytes(key).decode("utf-8")

    def exists(self, key: str) -> bool:
        object_key = self._object_key(key)
        try:
            self._retry(lambda: self._client.head_object(Bucket=self.bucket, Key=object_key), f"head {key}",
                        key=key)
        except MissingArtefactError:
            return False
        return True

    def list(self, prefix: str = "") -> builtins.list[str]:
        full = f"{self.prefix}/{prefix}" if self.prefix else prefix
        strip = len(self.prefix) + 1 if self.prefix else 0

        def listing() -> list[str]:
            keys: list[str] = []
            token: str | None = None
            while True:
                kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": full}
                if token:
                    kwargs["ContinuationToken"] = token
                page = self._client.list_objects_v2(**kwargs)
                keys.extend(item["Key"][strip:] for item in page.get("Contents", []))
                if not page.get("IsTruncated"):
                    return keys
                token = page.get("NextContinuationToken")

        return sorted(self._retry(listing, f"list {prefix or '(all)'}"))

    def delete(self, key: str) -> None:
        object_key = self._object_key(key)  # S3 answers 204 for an absent key too
        self._retry(lambda: self._client.delete_object(Bucket=self.bucket, Key=object_key), f"delete {key}")


def open_store(spec: str, s3_endpoint: str | None = None) -> ArtefactStore:
    """A local folder, or ``s3://bucket[/prefix]`` at an S3-compatible endpoint."""
    if spec.startswith("s3://"):
        bucket, _, prefix = spec[len("s3://"):].partition("/")
        if not bucket:
            raise UsageError(f"--store {spec!r}: expected s3://BUCKET[/PREFIX]")
        return S3Store(bucket, s3_endpoint, prefix=prefix)
    return LocalFolderStore(Path(spec))
