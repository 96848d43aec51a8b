"""JSON over HTTP to one OpenSearch node.

HTTP is stdlib ``urllib``: no client library, so nothing heavy is imported.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

from harness.errors import IntegrityError, UsageError

URL_ENV = "RAGSWEEP_OPENSEARCH_URL"
_RETRY_STATUSES = frozenset({429, 502, 503, 504})


class OpenSearchClient:
    """JSON over HTTP to one node. Idempotent reads retry with capped backoff; writes never do."""

    def __init__(self, url: str, *, timeout: float = 120.0, deadline: float = 30.0) -> None:
        if not url:
            raise UsageError(f"no OpenSearch URL: set {URL_ENV} (make stack-up; eval \"$(stack/env.sh)\")")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.deadline = deadline

    def request(self, method: str, path: str, body: Any = None, *, params: Mapping[str, Any] | None = None,
                missing_ok: bool = False) -> Any:
        """One request; a list body goes as NDJSON (``_bulk``). 404 -> None when ``missing_ok``."""
        url = self.url + path
        if params:
            url += "?" + urllib.parse.urlencode({k: str(v).lower() if isinstance(v, bool) else v
                                                 for k, v in params.items()})
        headers: dict[str, str] = {}
        data = None
        if isinstance(body, list):
            data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in body).encode("utf-8")
            headers["Content-Type"] = "application/x-ndjson"
        elif body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        retry = method in {"GET", "HEAD"} or path.endswith(("/_search", "/_count", "/_refresh"))
        give_up = time.monotonic() + self.deadline
        delay = 0.1
        while True:
            req = urllib.request.Request(url, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as response:
                    raw = response.read()
                return json.loads(raw) if raw else None
            except urllib.error.HTTPError as e:
                text = e.read().decode("utf-8", errors="replace")
                if e.code == 404 and missing_ok:
                    return None
                if not (retry and e.code in _RETRY_STATUSES and time.monotonic() < give_up):
                    raise IntegrityError(f"OpenSearch {method} {path} -> HTTP {e.code}: {text[:2000]}") from e
            except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
                if not (retry and time.monotonic() < give_up):
                    raise UsageError(f"OpenSearch at {self.url} did not answer {method} {path} ({e}); "
                                     "is the stack up? (make stack-up)") from e
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    def version(self) -> str:
        return str(self.request("GET", "/")["version"]["number"])


def client_from_env(environ: Mapping[str, str]) -> OpenSearchClient:
    return OpenSearchClient(environ.get(URL_ENV, ""))
