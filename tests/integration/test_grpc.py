"""gRPC through a real mitmdump (probe R): HTTP/2 from the client (httpx) to mitmdump in
reverse mode to an HTTP/2 upstream (tests/h2_util.py), the calls Google's client
libraries make to Vertex AI (google-cloud-aiplatform) and the Gemini API (the older
google-generativeai): `application/grpc`, the prompt in a protobuf string field.

disguise does not transform gRPC: such a call is scanned, and refused when it holds an
original. Read as one text, its body hid what its server reads: a message compressed by
the call's `grpc-encoding` (grpcio's `compression=grpc.Compression.Gzip`), gRPC-Web's
base64 text form, and a token right after its string's length byte when that byte is a
letter or a digit, and binary metadata (a `-bin` header, base64). Each went upstream with
the original; each is refused now, and a clean call, compressed or not, still goes
through byte for byte.

A refused call is answered as gRPC answers an error (HTTP 200, no body, `grpc-status`
and `grpc-message` in its only headers): grpcio read the JSON error's 400 as INTERNAL,
"Received http2 header with status: 400", and never showed why.
"""

from __future__ import annotations

import base64
import gzip
import zlib
from collections.abc import Iterator
from urllib.parse import unquote

import httpx
import pytest

from h2_util import Answer, H2Upstream, Stream
from integration_util import MITMDUMP, Mitmdump, mitmdump_cmd, write_mappings

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

MAPPINGS = {"literals": {"Acme Corp": "Zenith Labs"}}
HF = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zB9dF1hJ2kL4mN6pQ8rS0tU"  # 50 bytes: its length byte is "2"
GENERATE = "/google.cloud.aiplatform.v1.PredictionService/GenerateContent"
MODEL = "projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash"


def ld(number: int, data: bytes) -> bytes:
    """A length-delimited protobuf field (its length under 128)."""
    assert len(data) < 128
    return bytes([number << 3 | 2, len(data)]) + data


def request(text: str) -> bytes:
    """A GenerateContentRequest: model = 5, contents = 2 (Content: role = 1, parts = 2 (Part: text = 1))."""
    return ld(5, MODEL.encode()) + ld(2, ld(1, b"user") + ld(2, ld(1, text.encode())))


def frame(msg: bytes, compressed: bool = False) -> bytes:
    return bytes([compressed]) + len(msg).to_bytes(4, "big") + msg


def answer(st: Stream) -> Answer:
    return Answer(headers=[("content-type", "application/grpc")], pieces=[frame(ld(1, b"ok"))],
                  trailers=[("grpc-status", "0")])  # fmt: skip


class Proxy:
    def __init__(self, up: H2Upstream, md: Mitmdump) -> None:
        self.up, self.md = up, md
        self.client = httpx.Client(http2=True, verify=False, base_url=f"https://127.0.0.1:{md.port}", timeout=30)

    def call(self, body: bytes, ctype: str = "application/grpc", coding: str | None = None,
             **metadata: str) -> httpx.Response:  # fmt: skip
        headers = {"content-type": ctype, "te": "trailers", **({"grpc-encoding": coding} if coding else {}), **metadata}
        r = self.client.post(GENERATE, content=body, headers=headers)
        assert r.http_version == "HTTP/2"
        return r


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    d = tmp_path_factory.mktemp("grpc")
    with H2Upstream(d, answer) as up:
        cmd = mitmdump_cmd(up.port, d / "conf", write_mappings(d, MAPPINGS), "--set", "ssl_insecure=true")
        cmd[cmd.index("--mode") + 1] = f"reverse:https://127.0.0.1:{up.port}"
        md = Mitmdump(cmd)
        p = Proxy(up, md)
        try:
            yield p
        finally:
            p.client.close()
            md.stop()


def refused(r: httpx.Response) -> str:
    """The message of a gRPC error answer (a Trailers-Only one), INVALID_ARGUMENT."""
    assert r.status_code == 200 and r.content == b"", (r.status_code, r.content[:300])
    assert r.headers["content-type"].startswith("application/grpc") and r.headers["x-disguise"] == "refused"
    assert r.headers["grpc-status"] == "3"  # INVALID_ARGUMENT, as Google's APIs give a 400
    return unquote(r.headers["grpc-message"])


def _leaking() -> dict[str, tuple[bytes, str, str | None]]:
    msg = request("Tell me about Acme Corp")
    return {
        "gzip": (frame(gzip.compress(msg), True), "application/grpc", "gzip"),
        "deflate": (frame(zlib.compress(msg), True), "application/grpc+proto", "deflate"),
        "grpc-web-text": (base64.b64encode(frame(msg)), "application/grpc-web-text", None),
        "token after its length byte": (frame(ld(1, HF.encode())), "application/grpc", None),
    }


@pytest.mark.parametrize("case", sorted(_leaking()))
def test_a_grpc_call_holding_an_original_is_refused_however_its_body_is_coded(proxy: Proxy, case: str) -> None:
    body, ctype, coding = _leaking()[case]
    before = len(proxy.up.streams)
    r = proxy.call(body, ctype, coding)
    message = refused(r)
    assert "is not an endpoint disguise transforms, and it holds an original" in message
    assert "Acme" not in message and HF not in message
    assert r.headers["content-type"] == ctype
    assert len(proxy.up.streams) == before, "the call went upstream"


def test_a_message_in_a_coding_disguise_cannot_read_is_refused_saying_why(proxy: Proxy) -> None:
    before = len(proxy.up.streams)
    r = proxy.call(frame(b"\xff\x06\x00\x00sNaPpY" + request("hello"), True), coding="snappy")
    assert "a gRPC message is compressed in a coding disguise does not decode" in refused(r)
    assert len(proxy.up.streams) == before


def test_binary_metadata_holding_an_original_is_refused(proxy: Proxy) -> None:
    """gRPC metadata named `*-bin` is base64, decoded by the server (often a protobuf)."""
    before = len(proxy.up.streams)
    for value in (base64.b64encode(b"Acme Corp"), base64.b64encode(ld(1, HF.encode()))):
        r = proxy.call(frame(request("hello")), **{"x-goog-ext-note-bin": value.decode().rstrip("=")})
        assert "(base64-decoded)" in refused(r)
    assert len(proxy.up.streams) == before
    r = proxy.call(frame(request("hello")), **{"x-goog-ext-note-bin": base64.b64encode(ld(1, b"fine")).decode()})
    assert r.status_code == 200 and "grpc-status" not in r.headers and len(proxy.up.streams) == before + 1


def test_a_call_with_a_second_content_type_is_read_as_grpc_too(proxy: Proxy) -> None:
    """`content-type: text/plain` then `content-type: application/grpc`: disguise read the
    body by the first, grpc-go takes the second (the one that says gRPC) and decompressed
    the message; both headers went upstream."""
    before = len(proxy.up.streams)
    body = frame(gzip.compress(request("Tell me about Acme Corp")), True)
    headers = [("content-type", "text/plain"), ("content-type", "application/grpc"), ("grpc-encoding", "gzip")]
    r = proxy.client.post(GENERATE, content=body, headers=headers)
    assert r.status_code == 400 and b"it holds an original" in r.content, (r.status_code, r.content[:300])
    assert len(proxy.up.streams) == before


@pytest.mark.parametrize("compressed", [False, True])
def test_a_clean_grpc_call_goes_through_byte_for_byte(proxy: Proxy, compressed: bool) -> None:
    msg = request("Tell me about nobody")
    body = frame(gzip.compress(msg), True) if compressed else frame(msg)
    r = proxy.call(body, coding="gzip" if compressed else None)
    assert r.status_code == 200 and r.content == frame(ld(1, b"ok"))
    got = proxy.up.streams[-1]
    assert got.headers[":path"] == GENERATE and got.body == body
