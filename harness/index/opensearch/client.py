"""JSON over HTTP to one OpenSearch node, over opensearch-py's HTTP connection.

opensearch-py is imported on the first request, not with this module, so ``ragsweep --help``
and the modules that only name the type stay fast. This module uses its connection layer
(urllib3 pooling, URL and TLS handling) and not its ``Transport``: the connection hands back
status and body as the node sent them, so error messages quote the node's own bytes, and no
second retry loop runs under the one retry policy, harness.retries (tenacity), whose clock
and sleep are injectable so a retry test takes no wall time.

Credentials, where a node asks for them, travel in the URL as ``https://USER:PASSWORD@host:9200``
(opensearch-py sends them as HTTP basic auth; a Kubernetes pod assembles that URL from its Secret
with ``$(VAR)`` references, so neither a pod spec nor a command line holds it); the CA that signed
the node's certificate is opensearch-py's default, ``SSL_CERT_FILE`` before certifi's bundle. Nothing
this client writes (errors, logs) names the password: messages use ``where``, the URL without it.
A URL with neither (the loopback stack's ``http://127.0.0.1:9200``) is plain HTTP, as before. A chart
release's OpenSearch asks for both (its pod's nginx, docs/kubernetes.md): a refusal (401/403), ``http://`` to
its TLS port and a failed TLS handshake are each one line and a usage error (exit 2), never retried.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from harness.errors import IntegrityError, UsageError
from harness.retries import RetryError, call_with_retries

if TYPE_CHECKING:
    from opensearchpy import Connection

URL_ENV = "RAGSWEEP_OPENSEARCH_URL"
_RETRY_STATUSES = frozenset({429, 502, 503, 504})
_BASE_S, _CAP_S = 0.1, 2.0  # the first retry waits 0.1s, doubling to at most 2s
_EVERY_STATUS = range(100, 600)  # the connection raises on none: statuses are judged here
_HTML_TITLE = re.compile(r"<title>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_PLAIN_TO_TLS = "plain HTTP request was sent to HTTPS port"  # nginx's answer to http:// on its TLS port


class _HttpStatus(Exception):
    """A node's non-2xx answer, with its body as the node sent it."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.text = text


class OpenSearchClient:
    """JSON over HTTP to one node. Idempotent reads retry with capped backoff; writes never do."""

    def __init__(self, url: str, *, timeout: float = 120.0, deadline: float = 30.0,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        if not url:
            raise UsageError(f"no OpenSearch URL: set {URL_ENV} (make stack-up; eval \"$(stack/env.sh)\")")
        self.url = url.rstrip("/")
        self.where = _without_credentials(self.url)
        self.timeout = timeout
        self.deadline = deadline
        self.sleep = sleep
        self.clock = clock
        self._connection: Connection | None = None

    @property
    def connection(self) -> Connection:
        """opensearch-py's connection to the node, made on first use (the import is not free)."""
        if self._connection is None:
            from opensearchpy import OpenSearch

            # The client parses the URL (scheme, host, port, path prefix) into one connection.
            self._connection = OpenSearch([self.url], timeout=self.timeout).transport.get_connection()
        return self._connection

    def request(self, method: str, path: str, body: Any = None, *, params: Mapping[str, Any] | None = None,
                missing_ok: bool = False) -> Any:
        """One request; a list body goes as NDJSON (``_bulk``). 404 -> None when ``missing_ok``."""
        query = {k: str(v).lower() if isinstance(v, bool) else v for k, v in (params or {}).items()}
        headers: dict[str, str] = {}  # lower case: the connection's own defaults are, and a dict keeps both spellings
        data = None
        if isinstance(body, list):
            data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in body).encode("utf-8")
            headers["content-type"] = "application/x-ndjson"
        elif body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers["content-type"] = "application/json"
        retry = method in {"GET", "HEAD"} or path.endswith(("/_search", "/_count", "/_refresh"))

        def once() -> Any:
            status, _, raw = self.connection.perform_request(method, path, query or None, data, ignore=_EVERY_STATUS,
                                                             headers=headers)
            if not 200 <= status < 300:
                raise _HttpStatus(status, raw)
            return json.loads(raw) if raw else None

        error: BaseException
        try:
            if not retry:
                return once()
            return call_with_retries(once, is_transient=_transient, what=f"OpenSearch {method} {path}",
                                     deadline_s=self.deadline, base_s=_BASE_S, cap_s=_CAP_S,
                                     sleep=self.sleep, clock=self.clock, jitter=None)
        except RetryError as gave_up:
            error = gave_up.last_attempt.exception() or gave_up
        except Exception as e:
            if not isinstance(e, _HttpStatus) and not _unanswered(e):
                raise
            error = e
        if isinstance(error, _HttpStatus):
            if error.status == 404 and missing_ok:
                return None
            text = _quotable(error.text)
            if error.status in (401, 403):
                raise UsageError(f"OpenSearch at {self.where} refused {method} {path} (HTTP {error.status}: {text}): "
                                 f"{self._credentials_hint(error.status)}") from error
            if error.status == 400 and _PLAIN_TO_TLS in text:
                raise UsageError(f"OpenSearch at {self.where} speaks TLS on that port (HTTP 400: {text}): "
                                 "use an https:// URL") from error
            raise IntegrityError(f"OpenSearch {method} {path} -> HTTP {error.status}: {text}") from error
        if _tls_failed(error):
            raise UsageError(f"OpenSearch at {self.where}: TLS failed on {method} {path} ({_reason(error)}); an "
                             "https:// URL needs a node that speaks TLS, with a certificate for the URL's host signed "
                             "by a CA in SSL_CERT_FILE (a release's pods mount its CA there)") from error
        raise UsageError(f"OpenSearch at {self.where} did not answer {method} {path} ({_reason(error)}); "
                         "is the stack up? (make stack-up)") from error

    def _credentials_hint(self, status: int) -> str:
        if status == 403:
            return "the user in the URL may not do that"
        if "@" not in urlsplit(self.url).netloc:
            return ("the node asks for credentials and the URL carries none "
                    "(https://USER:PASSWORD@host:9200; a release's pods get them from its Secret)")
        return "the user and password in the URL were not accepted"

    def version(self) -> str:
        return str(self.request("GET", "/")["version"]["number"])


def _without_credentials(url: str) -> str:
    """``url`` with any ``user:password@`` replaced by ``***@``: what a message may quote."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def _transient(error: BaseException) -> bool:
    # a failed TLS handshake (an unknown CA, a name the certificate lacks, TLS to a plain port) fails the same way
    # every time: not retried
    return (isinstance(error, _HttpStatus) and error.status in _RETRY_STATUSES) or (
        _unanswered(error) and not _tls_failed(error))


def _tls_failed(error: BaseException) -> bool:
    from opensearchpy.exceptions import SSLError

    return isinstance(error, SSLError)


def _quotable(text: str) -> str:
    """A node's error body as a message may quote it: an HTML page (a proxy's, e.g. nginx's 401 page) by its
    title, anything else (OpenSearch's JSON) as sent, up to 2,000 characters."""
    title = _HTML_TITLE.search(text) if text.lstrip()[:1] == "<" else None
    return " ".join(title.group(1).split()) if title else text[:2000]


def _unanswered(error: BaseException) -> bool:
    """No answer at all: refused, reset, timed out (opensearch-py wraps each in its ConnectionError)."""
    from opensearchpy.exceptions import ConnectionError as NoAnswer

    return isinstance(error, (NoAnswer, ConnectionError, TimeoutError))


def _reason(error: BaseException) -> str:
    """What went wrong underneath opensearch-py's ConnectionError (its own str() is a tuple)."""
    from opensearchpy.exceptions import ConnectionError as NoAnswer

    return str(error.info) if isinstance(error, NoAnswer) and error.info is not None else str(error)


def client_from_env(environ: Mapping[str, str]) -> OpenSearchClient:
    return OpenSearchClient(environ.get(URL_ENV, ""))
