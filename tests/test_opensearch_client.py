"""The OpenSearch client against an in-process HTTP server: what goes on the wire, what comes back,
which requests retry and for how long (on a fake clock), and the errors a caller sees."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from fakes import Clock

from harness.errors import IntegrityError, UsageError
from harness.index.opensearch.client import OpenSearchClient

pytest.importorskip("opensearchpy")


class Node:
    """A scripted node: each request pops the next (status, body) answer and is recorded."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, bytes]] = []
        self.seen: list[tuple[str, str, str | None, bytes]] = []  # method, path?query, content-type, body


@pytest.fixture
def node() -> Iterator[tuple[Node, str]]:
    state = Node()

    class Handler(BaseHTTPRequestHandler):
        def answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            state.seen.append((self.command, self.path, self.headers.get("Content-Type"), self.rfile.read(length)))
            status, body = state.answers.pop(0) if state.answers else (200, b"")
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = answer

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def client(url: str, clock: Clock, deadline: float = 30.0) -> OpenSearchClient:
    return OpenSearchClient(url, deadline=deadline, timeout=5.0, sleep=clock.sleep, clock=clock)


def test_json_in_and_out_with_params_as_opensearch_spells_them(node: tuple[Node, str]) -> None:
    state, url = node
    state.answers = [(200, b'{"version":{"number":"3.1.0"}}'), (200, '{"hits":{"total":{"value":1},"q":"é"}}'.encode())]
    c = client(url, Clock())
    assert c.version() == "3.1.0"
    got = c.request("POST", "/ix/_search", {"query": {"match": {"text": "café"}}},
                    params={"wait_for_completion": True, "size": 3})
    assert got == {"hits": {"total": {"value": 1}, "q": "é"}}
    assert state.seen[0][:2] == ("GET", "/")
    method, path, content_type, body = state.seen[1]
    assert (method, path, content_type) == ("POST", "/ix/_search?wait_for_completion=true&size=3", "application/json")
    assert body == '{"query": {"match": {"text": "café"}}}'.encode()  # UTF-8, not \\u escapes


def test_a_list_body_goes_as_ndjson_and_an_empty_answer_is_none(node: tuple[Node, str]) -> None:
    state, url = node
    state.answers = [(200, b'{"errors":false}'), (200, b"")]
    c = client(url, Clock())
    assert c.request("POST", "/_bulk", [{"index": {"_id": "a"}}, {"text": "ü"}]) == {"errors": False}
    assert state.seen[0][2:] == ("application/x-ndjson", '{"index": {"_id": "a"}}\n{"text": "ü"}\n'.encode())
    assert c.request("HEAD", "/ix") is None


def test_missing_ok_turns_404_into_none_and_otherwise_the_nodes_body_is_quoted(node: tuple[Node, str]) -> None:
    state, url = node
    error = b'{"error":{"type":"index_not_found_exception"},"status":404}'
    state.answers = [(404, error), (404, error), (404, b"")]
    c = client(url, Clock())
    assert c.request("GET", "/ix/_mapping", missing_ok=True) is None
    with pytest.raises(IntegrityError) as info:
        c.request("GET", "/ix/_mapping")
    assert str(info.value) == f"OpenSearch GET /ix/_mapping -> HTTP 404: {error.decode()}"
    assert c.request("HEAD", "/ix", missing_ok=True) is None
    assert len(state.seen) == 3  # a 404 is an answer, never retried


def test_reads_retry_throttling_with_doubling_sleeps(node: tuple[Node, str]) -> None:
    state, url = node
    state.answers = [(503, b"busy"), (429, b"slow down"), (502, b""), (200, b'{"count":7}')]
    clock = Clock()
    assert client(url, clock).request("POST", "/ix/_count", {}) == {"count": 7}
    assert clock.sleeps == [0.1, 0.2, 0.4]
    assert len(state.seen) == 4


def test_sleeps_are_capped_at_two_seconds_and_stop_at_the_deadline(node: tuple[Node, str]) -> None:
    state, url = node
    state.answers = [(503, b"busy %d" % n) for n in range(20)]
    clock = Clock()
    with pytest.raises(IntegrityError, match=r"^OpenSearch GET /ix/_stats -> HTTP 503: busy 7$"):
        client(url, clock, deadline=8.0).request("GET", "/ix/_stats")
    # 0.1+0.2+0.4+0.8+1.6+2+2 = 7.1; one more 2s sleep would end past 8s, so attempt 8 was the last
    assert clock.sleeps == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]
    assert len(state.seen) == 8


@pytest.mark.parametrize("path", ["/ix/_doc/a", "/_bulk", "/ix/_delete_by_query"])
def test_writes_never_retry(node: tuple[Node, str], path: str) -> None:
    state, url = node
    state.answers = [(503, b"busy"), (200, b"{}")]
    clock = Clock()
    with pytest.raises(IntegrityError, match=rf"^OpenSearch POST {path} -> HTTP 503: busy$"):
        client(url, clock).request("POST", path, {})
    assert clock.sleeps == [] and len(state.seen) == 1


def test_a_client_error_is_not_retried_even_on_a_read(node: tuple[Node, str]) -> None:
    state, url = node
    state.answers = [(400, b'{"error":"bad"}'), (200, b"{}")]
    clock = Clock()
    with pytest.raises(IntegrityError, match="HTTP 400"):
        client(url, clock).request("POST", "/ix/_search", {})
    assert clock.sleeps == [] and len(state.seen) == 1


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_no_answer_is_a_usage_error_that_names_the_stack() -> None:
    url = closed_port_url()
    clock = Clock()
    with pytest.raises(UsageError, match=rf"^OpenSearch at {url} did not answer GET / \(.+\); is the stack up\? "
                                         r"\(make stack-up\)$"):
        client(url, clock, deadline=1.0).request("GET", "/")
    assert clock.sleeps == [0.1, 0.2, 0.4]  # reads retry a refused connection until the deadline
    clock = Clock()
    with pytest.raises(UsageError, match="did not answer PUT /ix"):
        client(url, clock).request("PUT", "/ix", {})
    assert clock.sleeps == []


def test_no_url_says_how_to_get_one() -> None:
    with pytest.raises(UsageError, match=r"no OpenSearch URL: set RAGSWEEP_OPENSEARCH_URL"):
        OpenSearchClient("")


def test_the_library_loads_on_the_first_request_not_on_import() -> None:
    code = ("import sys\nfrom harness.index.opensearch.client import OpenSearchClient\n"
            "OpenSearchClient('http://127.0.0.1:9')\nprint('opensearchpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         cwd=Path(__file__).parent.parent).stdout
    assert out.strip() == "False"


def test_a_json_body_is_parsed_as_json(node: tuple[Node, str]) -> None:
    state, url = node
    state.answers = [(200, json.dumps([1, "x"]).encode())]
    assert client(url, Clock()).request("GET", "/_cat/indices") == [1, "x"]


# --- credentials and TLS: what a chart release's pods would use; the loopback stack uses neither -----

def _serve(handler: type[BaseHTTPRequestHandler], context: Any = None) -> tuple[ThreadingHTTPServer, int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


class _AuthNode(BaseHTTPRequestHandler):
    """Answers 200 to the right basic credentials, 401 to anything else, and records what it was sent."""

    seen: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        auth = self.headers.get("Authorization")
        _AuthNode.seen.append(auth)
        ok = auth == "Basic " + base64.b64encode(b"ragsweep:s3cr3tPW").decode()
        body = b'{"version":{"number":"3.6.0"}}' if ok else b'{"error":"unauthorized"}'
        self.send_response(200 if ok else 401)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_credentials_in_the_url_are_sent_as_basic_auth_and_never_quoted() -> None:
    _AuthNode.seen.clear()
    server, port = _serve(_AuthNode)
    try:
        assert client(f"http://ragsweep:s3cr3tPW@127.0.0.1:{port}", Clock()).version() == "3.6.0"
        clock = Clock()
        with pytest.raises(UsageError, match=rf"^OpenSearch at http://127.0.0.1:{port} refused GET / \(HTTP 401: "
                                             r'\{"error":"unauthorized"\}\): the node asks for credentials and the '
                                             r"URL carries none \(https://USER:PASSWORD@host:9200; "):
            client(f"http://127.0.0.1:{port}", clock).request("GET", "/")
        assert _AuthNode.seen[0] is not None and _AuthNode.seen[1] is None  # no URL credentials: no header
        with pytest.raises(UsageError, match=r"^OpenSearch at http://\*\*\*@127.0.0.1:\d+ refused GET / \(HTTP 401: .*"
                                             r"\): the user and password in the URL were not accepted$") as wrong:
            client(f"http://ragsweep:wrongPW@127.0.0.1:{port}", clock).request("GET", "/")
        assert "wrongPW" not in str(wrong.value) and clock.sleeps == []  # a refusal is not retried
    finally:
        server.shutdown()
        server.server_close()
    url = closed_port_url().replace("http://", "http://ragsweep:s3cr3tPW@")
    with pytest.raises(UsageError) as refused:
        client(url, Clock(), deadline=0.2).request("GET", "/")
    assert "s3cr3tPW" not in str(refused.value) and "OpenSearch at http://***@127.0.0.1:" in str(refused.value)


def test_https_verifies_the_node_against_the_ca_in_ssl_cert_file(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A node whose certificate a private CA signed (as the chart's would be) is trusted through SSL_CERT_FILE,
    opensearch-py's first choice; without it, the certificate is refused and nothing is sent in the clear."""
    import shutil
    import ssl

    openssl = shutil.which("openssl") or pytest.skip("no openssl to make a CA")

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], cwd=tmp_path, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "1",
        "-subj", "/CN=ragsweep test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "node.key", "-out", "node.csr", "-subj", "/CN=node")
    (tmp_path / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "node.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out",
        "node.crt", "-days", "1", "-extfile", "san.ext")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "node.crt", tmp_path / "node.key")
    _AuthNode.seen.clear()
    server, port = _serve(_AuthNode, context)
    url = f"https://ragsweep:s3cr3tPW@127.0.0.1:{port}"
    try:
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        clock = Clock()
        with pytest.raises(UsageError, match=r"^OpenSearch at https://\*\*\*@127.0.0.1:\d+: TLS failed on GET / \(.*"
                                             r"(CERTIFICATE_VERIFY_FAILED|certificate verify failed)") as refused:
            client(url, clock).request("GET", "/")
        assert "s3cr3tPW" not in str(refused.value) and _AuthNode.seen == []
        assert clock.sleeps == []  # an unknown CA stays unknown: not retried
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.crt"))
        assert client(url, Clock()).version() == "3.6.0"
    finally:
        server.shutdown()
        server.server_close()


def test_a_proxy_page_is_quoted_by_its_title_and_http_to_its_tls_port_says_use_https(node: tuple[Node, str]) -> None:
    """nginx (a release's OpenSearch proxy) answers in HTML: a message quotes the page's title, one line, and its
    answer to plain HTTP on its TLS port says what to do."""
    state, url = node
    page = b"<html>\r\n<head><title>401 Authorization Required</title></head>\r\n<body>\r\n<hr><center>nginx</center>"
    plain = (b"<html>\r\n<head><title>400 The plain HTTP request was sent to HTTPS port</title></head>\r\n"
             b"<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n</body>\r\n</html>\r\n")
    state.answers = [(401, page), (400, plain), (502, page.replace(b"401 Authorization Required", b"502 Bad Gateway"))]
    with pytest.raises(UsageError, match=r"\(HTTP 401: 401 Authorization Required\): the node asks for credentials"):
        client(url, Clock()).request("GET", "/")
    with pytest.raises(UsageError, match=r"^OpenSearch at http://127.0.0.1:\d+/? speaks TLS on that port \(HTTP 400: "
                                         r"400 The plain HTTP request was sent to HTTPS port\): use an https:// URL$"):
        client(url, Clock()).request("GET", "/")
    with pytest.raises(IntegrityError, match=r"^OpenSearch PUT /ix -> HTTP 502: 502 Bad Gateway$"):
        client(url, Clock()).request("PUT", "/ix", {})
