"""Leaks outside the API model (issue 27), black-box through real mitmdump: a body with a
transfer coding, the Uploads API's parts, messages that would quote an original, an
audit of a session where an endpoint disguise does not transform carried one, and what
`share` leaves out."""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote_plus

import pytest
from mitmproxy import io as mio

from integration_util import MITMDUMP, REPO, FakeUpstream, Mitmdump, Recorded, Reply, mitmdump_cmd, write_mappings

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

BOB = "bob@corp.example.com"
MAPPING = {"literals": {"Acme Corp": "Zenith Labs"}}  # EMAIL comes from the shipped defaults
# every way an original may be written in a message: as it is, percent- or form-encoded
WRITTEN = ("Acme Corp", "Acme%20Corp", "Acme+Corp", "Acme", BOB, "bob%40corp", "bob@corp")


def ok(rec: Recorded) -> Reply:
    return Reply([b'{"ok": true}'], headers={"Content-Type": "application/json"}, framing="length")


@pytest.fixture
def up() -> Iterator[FakeUpstream]:
    with FakeUpstream() as u:
        for key in ("m", "/v1/files", "/v1/conversations", "/v1/batches"):
            u.on(key, ok)
        yield u


def start(up: FakeUpstream, tmp: Path, *extra: str) -> Mitmdump:
    return Mitmdump(mitmdump_cmd(up.port, tmp / "conf", write_mappings(tmp, MAPPING), *extra))


def raw_request(port: int, head: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """One request written byte for byte on a socket (http.client will not write a
    Transfer-Encoding other than chunked); the answer read by http.client."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        resp = http.client.HTTPResponse(s)
        resp.begin()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()


def chunked(body: bytes, size: int = 100) -> bytes:
    out = b"".join(b"%x\r\n%s\r\n" % (len(body[i : i + size]), body[i : i + size]) for i in range(0, len(body), size))
    return out + b"0\r\n\r\n"


def post(port: int, path: str, body: bytes, headers: dict[str, str] | None = None,
         method: str = "POST") -> tuple[int, dict[str, str], bytes]:  # fmt: skip
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.request(method, path, body=body, headers={"content-type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


# -- a URL in a body, percent-encoded -----------------------------------------------------------


def test_a_url_in_a_body_is_masked_read_decoded(up: FakeUpstream, tmp_path: Path) -> None:
    """The provider fetches an image's or a document's URL, decoded (and a URL in a
    message, with a fetch tool): `Acme%20Corp`, a query's `Acme+Corp`, `bob%40corp...`
    went upstream as they came, and the leak guard passed them (it read the request's own
    URL decoded, not one in its body)."""
    img = "https://img.example/a.png?who=Acme%20Corp&to=bob%40corp.example.com"
    doc = "https://docs.example/view?q=Acme+Corp&page=2"
    bodies = {
        "/v1/messages": {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": img}},
            {"type": "document", "source": {"type": "url", "url": doc}}]}]},
        "/v1/chat/completions": {"model": "m", "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": img}},
            {"type": "text", "text": f"read {doc} and write to mailto:bob%40corp.example.com"}]}]},
    }  # fmt: skip
    m = start(up, tmp_path)
    try:
        for path, body in bodies.items():
            status, _, out = post(m.port, path, json.dumps(body).encode())
            assert status == 200, out
    finally:
        m.stop()
    assert [r.path for r in up.requests] == list(bodies)
    for r in up.requests:
        sent = unquote_plus(r.body.decode())
        assert not any(o in sent for o in ("Acme Corp", BOB)), sent
        assert "Zenith Labs" in sent and "[EMAIL_1]" in sent
        assert "https://img.example/a.png?who=" in r.body.decode() and "&page=2" in r.body.decode()


def echo_urls(rec: Recorded) -> Reply:
    """The model's answer: each URL it was sent, written back (the stream: a few
    characters a delta, so each disguise is cut across deltas), and one with a form's
    `+` for its spaces, as a model writing a search URL may."""
    import re

    from anthropic_util import build_stream

    urls = re.findall(r"https://\S+?(?=[\s\"]|$)", rec.body.decode())
    text = " ".join(urls + [u.replace("%20", "+") for u in urls])
    if rec.json.get("stream"):
        pieces = [text[i : i + 3] for i in range(0, len(text), 3)]
        return Reply([build_stream([("text", pieces)])], headers={"Content-Type": "text/event-stream"})
    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": [{"type": "text", "text": text}]}  # fmt: skip
    return Reply([json.dumps(body).encode()], headers={"Content-Type": "application/json"}, framing="length")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_an_answer_that_echoes_a_masked_url_reads_as_the_clients_url(tmp_path: Path, stream: bool) -> None:
    """The masker writes `Zenith Labs` in a URL as `Zenith%20Labs`: the answer's copy of
    the URL, and a copy with `Zenith+Labs`, reached the client with the disguise in it
    (its link then pointed at the disguise). The official SDK reads the original back,
    written as the URL wrote it, whole and split across deltas."""
    import anthropic

    url = "https://docs.example/view?q=Acme%20Corp&page=2"
    with FakeUpstream() as u:
        u.on("m", echo_urls)
        m = start(u, tmp_path)
        try:
            client = anthropic.Anthropic(base_url=f"http://127.0.0.1:{m.port}", api_key="test", max_retries=0,
                                         http_client=anthropic.DefaultHttpxClient(trust_env=False))  # fmt: skip
            ask = {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": f"summarise {url} please"}]}
            if stream:
                with client.messages.stream(**ask) as st:
                    text = "".join(st.text_stream)
            else:
                text = client.messages.create(**ask).content[0].text
        finally:
            m.stop()
    sent = u.requests[0].body.decode()
    assert "Zenith%20Labs" in sent and "Acme" not in unquote_plus(sent)
    assert text == f"{url} {url.replace('%20', '+')}"
    assert unquote_plus(text.split()[1]) == unquote_plus(url)


def test_a_percent_encoded_original_in_a_header_is_refused(up: FakeUpstream, tmp_path: Path) -> None:
    """A browser client's Referer carries its page's query: `?org=Acme%20Corp` went out as
    it came (the guard read the request's own URL decoded, its headers as written)."""
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}).encode()
    m = start(up, tmp_path)
    try:
        for value in ("https://app.example/?org=Acme%20Corp", "https://app.example/?org=Acme+Corp"):
            status, headers, out = post(m.port, "/v1/messages", body, {"referer": value})
            assert status == 400 and headers["x-disguise"] == "refused", (status, out)
            assert b"header referer (percent-decoded)" in out and b"Acme" not in out
        assert post(m.port, "/v1/messages", body, {"referer": "https://app.example/?org=1+2"})[0] == 200
    finally:
        m.stop()
    assert len(up.requests) == 1


def test_a_header_folded_over_lines_is_read_unfolded(up: FakeUpstream, tmp_path: Path) -> None:
    """`X-Note: Acme\r\n Corp` (obs-fold): mitmproxy forwards the fold as it came, and an
    RFC 9112 receiver reads "Acme Corp"; the guard reads it so too, and refuses it."""
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}).encode()
    m = start(up, tmp_path)
    try:
        head = (f"POST /v1/messages HTTP/1.1\nHost: api.anthropic.com\nContent-Type: application/json\n"
                f"Content-Length: {len(body)}\nX-Note: Acme\n \tCorp\nConnection: close\n")  # fmt: skip
        status, headers, out = raw_request(m.port, head, body)
        assert status == 400 and headers["x-disguise"] == "refused", (status, out)
        assert b"literal in header x-note" in out and b"Acme" not in out
        status, _, out = raw_request(m.port, head.replace("Acme", "Zeta"), body)
        assert status == 200, (status, out)
    finally:
        m.stop()
    assert len(up.requests) == 1


# -- a transfer coding other than chunked ---------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/batches", "/v1/messages"], ids=["not-transformed", "transformed"])
def test_a_transfer_coded_body_is_refused_never_forwarded(up: FakeUpstream, tmp_path: Path, path: str) -> None:
    """mitmproxy 11 and 12 accept `Transfer-Encoding: gzip, chunked` on a request, undo
    the chunking only and forward the gzip bytes: read as they stand, they hold nothing.
    Refused, saying how to send it instead; nothing reaches the upstream."""
    doc = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": f"Acme Corp: {BOB}"}]}
    body = chunked(gzip.compress(json.dumps(doc).encode()))
    m = start(up, tmp_path)
    try:
        head = f"POST {path} HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\nTransfer-Encoding: gzip, chunked\n"
        status, headers, out = raw_request(m.port, head, body)
        assert status == 400 and headers.get("x-disguise") == "refused", (status, out)
        assert b"Content-Encoding instead" in out or b"cannot be decoded" in out, out
        # the same body with Content-Encoding is read, masked where it is transformed
        head = f"POST {path} HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\nContent-Encoding: gzip\n"
        gz = gzip.compress(json.dumps(doc).encode())
        status, _, _ = raw_request(m.port, head + f"Content-Length: {len(gz)}\n", gz)
    finally:
        m.stop()
        print(m.output[-3000:])
    if path == "/v1/messages":
        assert status == 200 and len(up.requests) == 1
        assert "Zenith Labs: [EMAIL_1]" in up.requests[0].body.decode()
    else:
        assert status == 400 and not up.requests


# -- the Uploads API --------------------------------------------------------------------------------


def multipart(data: bytes) -> tuple[bytes, str]:
    b = "xXbOuNdArYx"
    body = (f"--{b}\r\nContent-Disposition: form-data; name=\"data\"; filename=\"part\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{b}--\r\n".encode()  # fmt: skip
    return body, f"multipart/form-data; boundary={b}"


def test_upload_parts_are_refused_saying_how_to_upload(up: FakeUpstream, tmp_path: Path) -> None:
    """A part is checked alone: "Acme" in one and " Corp" in the next would pass as two
    clean halves and be put together upstream. Every part is refused, the message
    naming /v1/files; the file in one request is checked whole."""
    m = start(up, tmp_path, "--set", "stream_large_bodies=4k")
    try:
        for i, half in enumerate((b"notes about Acme", b" Corp and more")):
            body, ctype = multipart(half)
            status, headers, out = post(m.port, f"/v1/uploads/upload_abc/parts?n={i}", body, {"content-type": ctype})
            assert status == 400 and headers["x-disguise"] == "refused", (status, out)
            assert b"/v1/files" in out and b"multi-part upload" in out
        # a part mitmproxy would stream (stream_large_bodies): its headers would leave first;
        # the connection is closed before anything does
        body, ctype = multipart(b"x" * 6000 + b" Acme")
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            post(m.port, "/v1/uploads/upload_abc/parts?n=2", body, {"content-type": ctype})
        body, ctype = multipart(b"notes about Acme Corp")
        status, _, out = post(m.port, "/v1/files", body, {"content-type": ctype})
        assert status == 400 and b"literal in body" in out
        body, ctype = multipart(b"notes about nothing")
        status, _, _ = post(m.port, "/v1/files", body, {"content-type": ctype})
        assert status == 200
    finally:
        m.stop()
        print(m.output[-3000:])
    assert [r.path for r in up.requests] == ["/v1/files"]
    assert "multi-part upload" in m.output


def test_upload_parts_pass_where_the_user_allowed_unknown_endpoints(up: FakeUpstream, tmp_path: Path) -> None:
    up.on("/v1/uploads/upload_abc/parts", ok)
    m = start(up, tmp_path, "--set", "disguise_allow_unknown=true")
    try:
        body, ctype = multipart(b"plain bytes")
        status, _, _ = post(m.port, "/v1/uploads/upload_abc/parts", body, {"content-type": ctype})
        assert status == 200
    finally:
        m.stop()
    assert [r.path for r in up.requests] == ["/v1/uploads/upload_abc/parts"]


# -- endpoints whose traffic would not pass through the proxy ---------------------------------------


@pytest.mark.parametrize(
    ("path", "ctype", "says"),
    [("/v1/realtime/calls", "application/sdp", b"WebSocket (/v1/realtime)"),
     ("/v1/live/sessions", "application/sdp", b"Realtime WebSocket"),
     ("/model/amazon.nova-sonic-v1%3A0/invoke-with-bidirectional-stream", "application/vnd.amazon.eventstream",
      b"for as long as the session lasts")],
    ids=["webrtc-call", "live-webrtc", "bedrock-bidirectional"],
)  # fmt: skip
def test_endpoints_nothing_could_mask_are_refused(up: FakeUpstream, tmp_path: Path, path: str, ctype: str,
                                                   says: bytes) -> None:  # fmt: skip
    """A WebRTC call's events and a bidirectional stream's input never pass through the
    proxy as a body it could read: the request that starts one is refused, saying what to
    use instead, even when it holds no original; nothing reaches the upstream."""
    up.on(path.split("?")[0], ok)
    m = start(up, tmp_path)
    try:
        status, headers, out = post(m.port, path, b"v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n", {"content-type": ctype})
    finally:
        m.stop()
        print(m.output[-3000:])
    assert status == 400 and headers.get("x-disguise") == "refused", (status, out)
    assert says in out and b"disguise_allow_unknown" in out
    assert not up.requests


# -- messages never quote an original ---------------------------------------------------------------


@pytest.mark.parametrize("verbosity", ["info", "debug"])  # mitmproxy's default, and its most verbose
def test_no_message_quotes_an_original(up: FakeUpstream, tmp_path: Path, verbosity: str) -> None:
    """Every refusal path, with originals planted in the path, the query, a header and
    the body: none of them appears in disguise's log lines (at the default level and at
    debug), in the
    error body the client gets, the saved flows' comments and URLs, or, at the default
    level, anywhere in mitmdump's output: mitmproxy's own line per flow prints the URL
    (turned off at debug, flow_detail=0: mitmproxy's debug lines are its own)."""
    flows = tmp_path / "session.flows"
    detail = ("--set", "flow_detail=0") if verbosity == "debug" else ()
    m = start(up, tmp_path, "--set", "stream_large_bodies=4k", *detail, "-w", str(flows),
              "--set", f"termlog_verbosity={verbosity}")  # fmt: skip
    q = "?owner=bob%40corp.example.com&org=Acme+Corp"
    hdr = {"x-note": BOB, "x-org": "Acme Corp"}
    doc = json.dumps({"model": "m", "note": f"Acme Corp {BOB}"}).encode()
    bodies: list[bytes] = []
    try:
        cases = [
            # an endpoint disguise does not transform, the original in its path
            ("POST", f"/v1/conversations/Acme%20Corp/items{q}", doc, {}),
            ("POST", f"/v1/conversations/{BOB.replace('@', '%40')}/items{q}", doc, {}),
            # an API body that cannot be decoded: its content-encoding is an original
            ("POST", f"/v1/messages{q}", doc, {"content-encoding": "Acme Corp"}),
            # an API body that is not JSON
            ("POST", f"/v1/messages{q}", b'{"model": "m", "x": "Acme Corp ' + BOB.encode(), {}),
            # the leak guard: an original in a header of a masked request
            ("POST", f"/v1/messages{q}", doc, {}),
            # an upload part, a transfer coding (the raw cases below), a WebSocket
            ("POST", f"/v1/uploads/Acme%20Corp/parts{q}", doc, {}),
            ("GET", f"/v1/threads/Acme%20Corp/stream{q}", b"", {"upgrade": "websocket", "connection": "upgrade"}),
        ]
        for method, path, body, extra in cases:
            status, _, out = post(m.port, path, body, {**hdr, **extra}, method)
            assert status >= 400, (path, status, out)
            bodies.append(out)
        # a body mitmproxy streams (stream_large_bodies): its URL and headers would leave before
        # it, so they are checked at once and the connection closed (no error body to read)
        for path in (f"/v1/conversations/Acme%20Corp/items{q}", f"/v1/conversations{q}", "/v1/messages"):
            with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
                post(m.port, path, doc + b" " * 6000, hdr)
        head = (f"POST /v1/files/Acme%20Corp{q} HTTP/1.1\nHost: 127.0.0.1\nX-Note: {BOB}\n"
                "Transfer-Encoding: gzip, chunked\n")  # fmt: skip
        # no length: mitmproxy could stream it, so its URL is read first and the connection closed
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            raw_request(m.port, head, chunked(gzip.compress(doc)))
    finally:
        m.stop()
        print(m.output[-6000:])
    assert not up.requests
    disguise_lines = [ln for ln in m.output.splitlines() if "disguise" in ln]
    assert any("request refused" in ln for ln in disguise_lines), m.output
    with open(flows, "rb") as f:
        saved = list(mio.FlowReader(f).stream())
    comments = [fl.comment for fl in saved]
    urls = [fl.request.url for fl in saved]  # type: ignore[attr-defined]
    assert sum("refused" in c for c in comments) >= len(bodies) - 1, comments  # a WebSocket refusal too
    assert any("<original>" in u for u in urls), urls
    output = m.output.splitlines() if verbosity == "info" else disguise_lines
    assert verbosity == "debug" or any("/v1/conversations/<original>/items" in ln for ln in output), m.output
    for where, texts in (("log", output), ("error body", [b.decode() for b in bodies]), ("comment", comments),
                         ("saved URL", urls)):  # fmt: skip
        for t in texts:
            for o in WRITTEN:
                assert o not in t, f"{o!r} quoted in a {where}: {t}"
    assert any("<original>" in t for t in disguise_lines), "the place is still named"


def test_a_refusals_path_never_spells_an_original_its_keys_spell_together(up: FakeUpstream, tmp_path: Path) -> None:
    """Keys clean alone that join into an original (`build.internal.acme.io`): the place
    the refusal names is withheld, in the error body and the log line."""
    mapping = {"literals": {**MAPPING["literals"], "build.internal.acme.io": "host-a.example"}}
    m = Mitmdump(mitmdump_cmd(up.port, tmp_path / "conf", write_mappings(tmp_path, mapping)))
    try:
        doc = {"build": {"internal": {"acme": {"io": "Acme Corp"}}}}
        status, _, out = post(m.port, "/v1/assistants", json.dumps(doc).encode())
    finally:
        m.stop()
    assert status == 400 and not up.requests
    lines = [ln for ln in m.output.splitlines() if "request refused" in ln]
    assert lines and "literal in body $[<key>]" in out.decode()
    for t in (out.decode(), *lines):
        assert "build.internal.acme.io" not in t and "Acme Corp" not in t, t


# -- the audit reads every flow that went upstream ---------------------------------------------------


def test_audit_finds_what_an_endpoint_disguise_does_not_transform_carried(up: FakeUpstream, tmp_path: Path) -> None:
    """Under disguise_allow_unknown, /v1/conversations carried an original upstream:
    the audit of the recorded session reports it (exit 1), naming the flow, never the
    original; without that flow the same session is clean."""
    flows, clean = tmp_path / "leaky.flows", tmp_path / "clean.flows"
    for path, allow in ((flows, "true"), (clean, "true")):
        m = start(up, tmp_path, "--set", f"disguise_allow_unknown={allow}", "-w", str(path))
        try:
            doc = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "Acme Corp"}]}
            assert post(m.port, "/v1/messages", json.dumps(doc).encode())[0] == 200
            if path is flows:
                status, _, _ = post(m.port, "/v1/conversations", json.dumps({"items": [f"write to {BOB}"]}).encode())
                assert status == 200
        finally:
            m.stop()
    assert any(BOB in r.body.decode() for r in up.requests)  # it did go out
    mappings = str(tmp_path / "mappings.yaml")

    def audit(path: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "disguiselib", "--mappings", mappings, "audit", str(path)],
                              cwd=REPO, capture_output=True, text=True, timeout=120,
                              env={"PYTHONPATH": str(REPO / "addon"), "PATH": "/usr/bin:/bin"})  # fmt: skip

    r = audit(flows)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "POST /v1/conversations" in r.stdout and "EMAIL match" in r.stdout and "LEAK" in r.stdout
    assert BOB not in r.stdout
    r = audit(clean)
    assert r.returncode == 0 and "clean: 1 LLM flow audited" in r.stdout, r.stdout + r.stderr


# -- listening on every interface is said once ------------------------------------------------------


def test_listening_on_loopback_says_nothing_of_interfaces(up: FakeUpstream, tmp_path: Path) -> None:
    """The harness listens on 127.0.0.1: no warning (the warning itself is in
    tests/mitm/test_listen.py: a test may not listen on every interface here)."""
    m = start(up, tmp_path)
    m.stop()
    assert "listens on all interfaces" not in m.output


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-v"]))


# -- a Cookie, and a multipart part's headers -------------------------------------------------------


def test_a_cookie_and_a_parts_headers_are_read_before_anything_leaves(up: FakeUpstream, tmp_path: Path) -> None:
    """A Cookie is a credential slot on OpenAI's APIs only (ChatGPT's backend reads its
    session from one): on a Messages request an original in it was forwarded, as was a
    file name written `filename*=UTF-8''Acme%20Corp.txt` (RFC 2231) to /v1/files, and
    any part header of a batch upload but its file name's. Each is refused now, naming
    no original; a Cloudflare cookie an SDK's client kept passes as it came."""
    msg = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}).encode()
    line = json.dumps({"custom_id": "1", "method": "POST", "url": "/v1/chat/completions",
                       "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}})  # fmt: skip
    b = "xXbOuNdArYx"
    files = (f"--{b}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nassistants\r\n--{b}\r\n"
             f"Content-Disposition: form-data; name=\"file\"; filename*=UTF-8''Acme%20Corp.txt\r\n\r\nnotes\r\n"
             f"--{b}--\r\n").encode()  # fmt: skip
    batch = (f"--{b}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--{b}\r\n"
             f"Content-Disposition: form-data; name=\"file\"; filename=\"a.jsonl\"\r\nX-Note: Acme Corp\r\n"
             f"Content-Type: application/jsonl\r\n\r\n{line}\r\n--{b}--\r\n").encode()  # fmt: skip
    multipart = {"content-type": f"multipart/form-data; boundary={b}"}
    cf = "__cf_bm=2kQ8o7bZ3.9xP_xq1aTq5N0O7A6dBvHr8O3Xb6Qm1rw-1733500000-1.0.1.1-AbCdEf; _cfuvid=Hy7.ZkP2x-0.0.1.1"
    m = start(up, tmp_path)
    try:
        for path, body, headers, where in (
            ("/v1/messages", msg, {"cookie": "org=Acme Corp; theme=dark"}, b"header cookie"),
            ("/v1/files", files, multipart, b"parameter 'filename'"),
            ("/v1/files", batch, multipart, b"part 2 headers"),
        ):
            status, got, out = post(m.port, path, body, headers)
            assert status == 400 and got["x-disguise"] == "refused", (path, status, out)
            assert where in out and b"Acme" not in out, out
        status, _, out = post(m.port, "/v1/messages", msg, {"cookie": cf})
        assert status == 200, out
    finally:
        m.stop()
    assert [(r.path, r.headers.get("cookie")) for r in up.requests] == [("/v1/messages", cf)]
    assert "Acme" not in m.output


# -- a body in UTF-16 or UTF-32 without a byte-order mark; what the audit reads of a body -----------


WIDE = ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")


@pytest.mark.parametrize("codec", WIDE)
def test_a_wide_body_without_a_byte_order_mark_is_read_as_its_receiver_reads_it(
    up: FakeUpstream, tmp_path: Path, codec: str
) -> None:
    """A JSON body in UTF-16 or UTF-32 without a BOM or a charset (Python's
    `json.loads(bytes)` tells it by its NUL bytes) also decodes as UTF-8, a NUL between
    the letters: an upload to /v1/files holding "Acme Corp" and an e-mail went upstream.
    It is refused now, naming no original."""
    body = json.dumps({"purpose": "assistants", "note": f"Acme Corp {BOB}"}).encode(codec)
    m = start(up, tmp_path)
    try:
        status, got, out = post(m.port, "/v1/files", body)
    finally:
        m.stop()
    assert status == 400 and got["x-disguise"] == "refused", (status, out)
    assert f"(read as {codec})".encode() in out and b"Acme" not in out, out
    assert not up.requests


def test_the_audit_reads_a_forwarded_body_as_the_leak_guard_does(up: FakeUpstream, tmp_path: Path) -> None:
    """Under disguise_allow_unknown, bodies the leak guard reads as their receiver does
    carried originals upstream — form fields (`+` and `%20` for a space), a multipart part
    in base64, a charset, UTF-16 without a BOM: the audit read them as UTF-8 text and
    called the session clean. It reports every one now, never quoting an original."""
    b64 = base64.b64encode(b"notes: Acme Corp").decode()
    parts = ("--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n"
             f"Content-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n{b64}\r\n--XyZ--\r\n").encode()  # fmt: skip
    cases = [
        ({"content-type": "application/x-www-form-urlencoded"}, b"purpose=assistants&note=Acme+Corp"),
        ({"content-type": "application/x-www-form-urlencoded"}, b"note=Acme%20Corp"),
        ({"content-type": "multipart/form-data; boundary=XyZ"}, parts),
        ({"content-type": "text/plain; charset=utf-16-le"}, "notes: Acme Corp".encode("utf-16-le")),
        ({"content-type": "application/json"}, json.dumps({"note": "Acme Corp"}).encode("utf-16-le")),
    ]
    flows = tmp_path / "session.flows"
    m = start(up, tmp_path, "--set", "disguise_allow_unknown=true", "-w", str(flows))
    try:
        for headers, body in cases:
            assert post(m.port, "/v1/files", body, headers)[0] == 200
    finally:
        m.stop()
    assert len(up.requests) == len(cases)  # every one went out
    r = subprocess.run([sys.executable, "-m", "disguiselib", "--mappings", str(tmp_path / "mappings.yaml"), "audit",
                        str(flows)], cwd=REPO, capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": str(REPO / "addon"), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert r.returncode == 1, r.stdout + r.stderr
    for i in range(1, len(cases) + 1):
        assert f"flow {i} POST /v1/files [openai.files]: 1 leak" in r.stdout, r.stdout
    assert "Acme" not in r.stdout


def test_a_forwarded_body_the_audit_cannot_decode_is_not_proven(up: FakeUpstream, tmp_path: Path) -> None:
    """disguise_fail_open forwards a body in a content-encoding disguise does not decode
    (`gzip, gzip`, one it does not know) as it came; its receiver decodes it, the audit
    read the compressed bytes and called the flow "ok", exit 0. It says the body was not
    decoded and the session NOT PROVEN (exit 2), and names the flow forwarded unmasked."""
    doc = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": f"Acme Corp {BOB}"}]})
    flows = tmp_path / "session.flows"
    up.on("/v1/messages", ok)  # the fake reads no model from a body it cannot decode either
    m = start(up, tmp_path, "--set", "disguise_fail_open=true", "-w", str(flows))
    try:
        for enc, body in (("gzip, gzip", gzip.compress(gzip.compress(doc.encode()))),
                          ("snappy", gzip.compress(doc.encode()))):  # fmt: skip
            assert post(m.port, "/v1/messages", body, {"content-encoding": enc})[0] == 200
    finally:
        m.stop()
    assert [r.headers.get("content-encoding") for r in up.requests] == ["gzip, gzip", "snappy"]  # as they came
    r = subprocess.run([sys.executable, "-m", "disguiselib", "--mappings", str(tmp_path / "mappings.yaml"), "audit",
                        str(flows)], cwd=REPO, capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": str(REPO / "addon"), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert r.returncode == 2, r.stdout + r.stderr
    for i in (1, 2):
        assert (f"flow {i} POST /v1/messages [anthropic.messages]: ok, REQUEST BODY NOT DECODED (its "
                "content-encoding) (forwarded unmasked (disguise_fail_open))") in r.stdout, r.stdout  # fmt: skip
    assert "NOT PROVEN: 2 of 2 LLM flows sent upstream in a content-encoding disguise does not decode" in r.stdout
    show = subprocess.run([sys.executable, "-m", "disguiselib", "--mappings", str(tmp_path / "mappings.yaml"), "show",
                           str(flows), "1"], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO / "addon"), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert "marked: ⟦…⟧ originals (they went upstream as they are: NOT masked)" in show.stdout, show.stdout
