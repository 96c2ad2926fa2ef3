"""A stand-in LLM provider for the walkthroughs: it answers like the Anthropic Messages
and OpenAI Chat Completions APIs (streamed or whole) by echoing the last user message
back, streamed three characters per event — so every disguise arrives split, the way a
model streams it — and prints what it received, i.e. what the provider would see.

    python examples/echo_provider.py --port 9000            # http://127.0.0.1:9000
    python examples/echo_provider.py --port 9443 --tls DIR  # https, self-signed cert written to DIR/cert.pem

Standard library only (plus `cryptography`, which mitmproxy ships, for --tls).
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import json
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def last_user_text(doc: dict) -> str:
    for msg in reversed(doc.get("messages") or []):
        if msg.get("role") == "user":
            c = msg.get("content")
            if isinstance(c, str):
                return c
            return " ".join(b.get("text", "") for b in c or [] if isinstance(b, dict))
    return ""


def pieces(text: str, n: int = 3) -> list[str]:
    return [text[i : i + n] for i in range(0, len(text), n)] or [""]


def event(name: str | None, data: object) -> bytes:
    body = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {name}\n" if name else "").encode() + f"data: {body}\n\n".encode()


def anthropic(doc: dict, text: str) -> tuple[str, list[bytes]]:
    model = doc.get("model", "echo")
    if not doc.get("stream"):
        msg = {"id": "msg_echo", "type": "message", "role": "assistant", "model": model,
               "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
               "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
        return "application/json", [json.dumps(msg).encode()]
    out = [event("message_start", {"type": "message_start", "message": {
        "id": "msg_echo", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}})]  # fmt: skip
    out.append(event("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": {"type": "text", "text": ""}}))  # fmt: skip
    for p in pieces(text):
        out.append(event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                 "delta": {"type": "text_delta", "text": p}}))  # fmt: skip
    out.append(event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    out.append(event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                     "stop_sequence": None}, "usage": {"output_tokens": 1}}))  # fmt: skip
    out.append(event("message_stop", {"type": "message_stop"}))
    return "text/event-stream", out


def openai_chat(doc: dict, text: str) -> tuple[str, list[bytes]]:
    base = {"id": "chatcmpl-echo", "created": 0, "model": doc.get("model", "echo")}
    if not doc.get("stream"):
        msg = {**base, "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
               "message": {"role": "assistant", "content": text}}]}  # fmt: skip
        return "application/json", [json.dumps(msg).encode()]
    base["object"] = "chat.completion.chunk"
    out = [event(None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                            "finish_reason": None}]})]  # fmt: skip
    for p in pieces(text):
        out.append(event(None, {**base, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}))
    out.append(event(None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    out.append(event(None, "[DONE]"))
    return "text/event-stream", out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        try:
            doc = json.loads(body)
        except ValueError:
            doc = {}
        text = last_user_text(doc)
        print(f"provider received {self.path}: {text}", file=sys.stderr, flush=True)
        path = self.path.split("?")[0]
        if path.endswith("/messages"):
            ctype, chunks = anthropic(doc, text)
        elif path.endswith("/chat/completions"):
            ctype, chunks = openai_chat(doc, text)
        else:
            ctype, chunks = "application/json", [b'{"error": {"message": "unknown path"}}']
        self.send_response(200)
        self.send_header("content-type", ctype)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for c in chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(c), c))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def self_signed(d: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost (for the regular-proxy walkthrough)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "echo provider")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                    x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    d.mkdir(parents=True, exist_ok=True)
    cp, kp = d / "cert.pem", d / "key.pem"
    cp.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    kp.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))  # fmt: skip
    return cp, kp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=9000)
    ap.add_argument("--tls", metavar="DIR", help="serve https with a self-signed cert written to DIR/cert.pem")
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    scheme = "http"
    if args.tls:
        cert, key = self_signed(Path(args.tls))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    print(f"echo provider listening at {scheme}://127.0.0.1:{server.server_address[1]}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
