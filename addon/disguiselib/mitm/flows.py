"""Flow facts (adapter-level): what a request is, whether it is protected, and how a
refusal or an error reaches the client in its provider's shape."""

from __future__ import annotations

from mitmproxy import ctx, http
from mitmproxy.net import encoding as mencoding
from mitmproxy.utils import human

from ..apis import registry
from ..apis.registry import OPENAI_CHAT, Api, RealtimeApi, llm_shaped, recognise
from ..base.bodies import media_type
from ..errors import MaskError, StreamError
from ..inspect.record import REFUSED_HEADERS, decoded_limit, destination, mark_refused
from ..leakguard import place, shown
from ..pipeline import leak_scan
from ..rules.rules import Rules
from ..scope import HostRule, in_hosts, known_host
from ..wire import grpc
from ..wire.decoding import carries_more, decode_whole
from .callables import Refused


def reverse_mode(flow: http.HTTPFlow) -> bool:
    mode = getattr(flow.client_conn, "proxy_mode", None)
    return type(mode).__name__ == "ReverseMode"


def target(flow: http.HTTPFlow) -> tuple[str, str, str, int, str]:
    r = flow.request
    return (r.method, r.scheme, r.host, r.port, r.path)


def websocket(flow: http.HTTPFlow) -> bool:
    return "websocket" in flow.request.headers.get("upgrade", "").lower()


def fallback_protected(flow: http.HTTPFlow, hosts: tuple[HostRule, ...]) -> bool:
    """Without a working configuration: could this request carry what must be masked?
    Any LLM-shaped path, any request to a known LLM host, every request in reverse mode
    (its upstream is the provider), and the last configured hosts."""
    r = flow.request
    return bool(
        recognise(r.method, r.path)
        or llm_shaped(r.path)
        or known_host(r.host)
        or known_host(r.pretty_host)
        or reverse_mode(flow)
        or (hosts and in_hosts(hosts, r.host, r.port, r.pretty_host))
    )


_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0", "::"})


def targets_web_ui(flow: http.HTTPFlow) -> bool:
    """A proxied request for mitmweb's own web UI (this process's, where it runs one).
    mitmweb 11.0 asks for no token: any client of the proxy could read every flow there,
    originals included, by asking the proxy for 127.0.0.1:8081 (CVE-2025-23217)."""
    opts = ctx.options
    port = getattr(opts, "web_port", None)
    if port is None or flow.request.port != port:
        return False
    host = flow.request.host.lower().strip("[]")
    return host in _LOOPBACK or host == str(getattr(opts, "web_host", "")).lower().strip("[]")


def error_api(flow: http.HTTPFlow) -> Api:
    """The API whose error shape a refusal of this flow takes."""
    api = recognise("POST", flow.request.path)
    return api if api is not None else OPENAI_CHAT


def error_body_for(flow: http.HTTPFlow, message: str) -> bytes:
    """An error in the shape of the provider the request was meant for."""
    r = flow.request
    return registry.error_body_for(r.method, r.path, r.pretty_host, r.headers.items())(message)


def websocket_refused(where: str, path: str) -> tuple[str, int]:
    """The refusal (message, status) of a WebSocket upgrade disguise does not mask. Where
    the same path over HTTP is an API disguise masks (the Responses API, which Codex
    opens as a WebSocket first), 426 Upgrade Required: the status a client reads as "not
    over WebSocket here" and answers by sending the request over HTTP at once (Codex
    falls back on a 426 alone; any other status it retries five times, with backoff,
    first). Elsewhere 400."""
    msg = f"disguise: request refused: {where}: WebSocket traffic cannot be masked"
    if recognise("POST", path) is None:
        return msg, 400
    return f"{msg}; send the request over HTTP, where it is masked", 426


def refuse(
    flow: http.HTTPFlow, message: str, status: int = 400, api: Api | RealtimeApi | None = None, *, rules: Rules | None
) -> None:
    """Answer the request with an error; nothing goes upstream. The flow is marked
    refused (inspect/record.mark_refused), as every refusal is, and its URL withheld
    where it holds an original (withhold_url). rules: those in force (None: none are)."""
    ctype = flow.request.headers.get("content-type", "")
    if api is None and grpc.kind(media_type(ctype)) in (grpc.GRPC, grpc.WEB_TEXT):
        # a gRPC call: the error as gRPC says one, which its client shows (grpc.error_headers)
        answer = {"content-type": ctype.split(";")[0].strip(), **grpc.error_headers(message, status)}
        response = http.Response.make(200, b"", {**REFUSED_HEADERS, **answer})
    else:  # (its shape read from the URL before it is withheld)
        body = api.error_body(message) if api is not None else error_body_for(flow, message)
        response = http.Response.make(status, body, REFUSED_HEADERS)
    withhold_url(flow, rules)
    flow.response = response
    mark_refused(flow, message, api.name if api is not None else None)


def stop(flow: http.HTTPFlow, why: str, *, rules: Rules | None) -> None:
    """Before the body arrives, when mitmproxy may stream it: a refusal would crash the
    HTTP layer (a response and a streamed request at once), so the connection is
    closed; nothing has gone upstream. A replayed flow cannot be killed: refused."""
    if flow.killable:
        withhold_url(flow, rules)
        mark_refused(flow, f"{why} (connection closed)")
        flow.kill()
    else:
        flow.request.stream = False
        refuse(flow, f"disguise: request refused: {why}", 503, rules=rules)


def withhold_url(flow: http.HTTPFlow, rules: Rules | None) -> None:
    """A refused request's path and query as every later reader shows them: each piece
    that holds an original replaced by <original> (leakguard.shown; all of it without
    rules), and so its authority (`:authority`, an absolute-form target), Host header,
    method, and the host it was for (an absolute-form target's or a CONNECT's: mitmdump's
    line prints the URL from it) where one holds an original. Nothing went upstream, and
    what reads the flow afterwards would print them as the client wrote them: mitmdump's
    flow line at the default log level, mitmweb's flow list, a saved flow file. The rest of
    the request is left as the client sent it."""
    r = flow.request
    if (host := shown(r.host, rules)) != r.host:
        r.data.host = host  # (the setter would write it into the Host header and authority too: they are read below)
    path = shown(r.path, rules)
    if path != r.path:
        r.path = path if path.startswith("/") else f"/{path}"
    if r.authority and (authority := shown(r.authority, rules)) != r.authority:
        r.authority = authority
    hosts = r.headers.get_all("host")
    if hosts and (shown_hosts := [shown(h, rules) for h in hosts]) != hosts:
        r.headers.set_all("host", shown_hosts)
    if rules is not None and (method := shown(r.method, rules)) != r.method:
        r.method = method


def stream_risk(flow: http.HTTPFlow) -> bool:
    """Could mitmproxy hand this request's body upstream as it arrives, past the
    `request` hook? It does with `stream_large_bodies` for a body over the limit —
    decided before requestheaders when the length is known, and while the body arrives
    (no hook) when it is not."""
    if flow.request.stream:
        return True
    try:
        limit = human.parse_size(getattr(ctx.options, "stream_large_bodies", None))
    except ValueError:
        return True
    if limit is None:
        return False
    length = flow.request.headers.get("content-length", "")
    return not (length.isdigit() and int(length) <= limit)


def streams_large_bodies() -> bool:
    # a proxyserver option: absent where no proxy server is loaded (unit tests, tools)
    return bool(getattr(ctx.options, "stream_large_bodies", None))


def body_limit() -> int | None:
    try:
        return human.parse_size(ctx.options.body_size_limit)
    except (ValueError, AttributeError):
        return None


# On the addon's own error in place of a successful answer upstream gave (and billed): a
# retry sends the same request again for the same failure, and the official SDKs
# (anthropic, openai: Stainless) retry every 5xx twice unless the answer says not to (their
# `_should_retry`). Upstream's own error (a 429, a 529) keeps what upstream said.
NO_RETRY = {"x-should-retry": "false"}


def not_to_retry(resp: http.Response) -> None:
    """Before resp, upstream's answer, becomes the addon's 502: NO_RETRY if it was a success."""
    if resp.status_code < 400:
        resp.headers.update(NO_RETRY)


def chunked(msg: http.Message) -> None:
    """Headers for a body whose length changes while it streams."""
    msg.headers.pop("content-length", None)
    if msg.http_version.startswith("HTTP/1"):
        msg.headers["transfer-encoding"] = "chunked"


def fix_headers(resp: http.Response) -> None:
    """A response body that is restored as it streams: decoded, its length unknown."""
    resp.headers.pop("content-encoding", None)
    chunked(resp)


def answer_replaced(resp: http.Response) -> None:
    """Headers for upstream's answer replaced, as it streams, by the addon's error: a
    502 in JSON, not to be retried (NO_RETRY), its length unknown."""
    not_to_retry(resp)
    resp.status_code = 502
    resp.headers["content-type"] = "application/json"
    fix_headers(resp)


def decode_body(raw: bytes, enc: str, rules: Rules | None = None, limit: int | None = None) -> bytes:
    """A body content-decoded, to at most `limit` bytes (disguise_decoded_limit unless
    given: a worker thread is given it) — never mitmproxy's `get_content`, which expands
    a body without bound. Raises MaskError when it cannot be; the message shows the
    encoding only as far as it holds no original (rules)."""
    try:
        return decode_whole(raw, enc, decoded_limit() if limit is None else limit)
    except StreamError as e:  # an unknown coding's error names it as it is: said here, shown
        why = "" if "content-encoding" in str(e) else f" ({e})"
        raise MaskError(f"cannot decode a body with content-encoding {shown(enc, rules)!r}{why}") from None


# A compressed request body from this size on is decoded, and its masked body encoded
# again, in a thread (mitmproxy's gzip of 1 MB takes tens of ms, a 200 MB one seconds).
CODED_OFF_LOOP = 4096


# The brotli quality a request body is encoded again with: mitmproxy's encoder uses the
# library's default, 11, which took 1.3-1.5 s for a 1 MB JSON body; 5 takes 14 ms, the
# result some 30% larger (measured on bench/bodies.py's 1 MB body).
BROTLI_QUALITY = 5


def encode_body(body: bytes, enc: str) -> bytes | None:
    """body content-encoded with enc (mitmproxy's encoder, brotli at BROTLI_QUALITY; safe
    in a thread); None when it cannot be (the content setter then does what it does)."""
    try:
        if enc.strip().lower() == "br":
            import brotli

            return brotli.compress(body, quality=BROTLI_QUALITY)  # type: ignore[no-any-return]
        return mencoding.encode(body, enc)
    except ValueError:
        return None


def leaving(raw: bytes, body: bytes, enc: str) -> bytes:
    """What leaves of a request body that goes on as it came (raw, content-encoded with
    enc; body: it decoded, what was checked): raw, unless its container carries more than
    its payload (a gzip file name or comment, a zstd skippable frame, any brotli body:
    decoding.carries_more), which nothing checked; then body encoded again. Raises
    MaskError when it cannot be (a coding the decoder took and the encoder does not)."""
    if not carries_more(raw, enc):
        return raw
    again = encode_body(body, "gzip" if enc.strip().lower() == "x-gzip" else enc)
    if again is None:
        raise MaskError("its content encoding cannot be made again without what its container carries")
    return again


def encoded_again(raw: bytes, body: bytes, enc: str, changed: bool) -> bytes | None:
    """What leaves of a content-encoded request body masking read (safe in a thread):
    the masked body encoded when masking changed it (None: it cannot be, the content
    setter then does what it does), else leaving(raw, body, enc). Raises MaskError."""
    return encode_body(body, enc) if changed else leaving(raw, body, enc)


def readable(r: http.Request, rules: Rules) -> bytes | None:
    """A request's body decoded to be scanned; None where it cannot be read (a transfer
    coding, a content coding that cannot be undone)."""
    if transfer_coded(r.headers):
        return None
    try:
        return decode_body(r.raw_content or b"", r.headers.get("content-encoding", ""), rules)
    except MaskError:
        return None


def contained(r: http.Request, body: bytes) -> None:
    """A request body that goes on as it came once body (it decoded) was checked: as
    leaving() says (encoded again where its container carries more). Raises MaskError."""
    raw = r.raw_content or b""
    out = leaving(raw, body, r.headers.get("content-encoding", ""))
    if out is not raw:
        r.raw_content = out
        if "transfer-encoding" not in r.headers:
            r.headers["content-length"] = str(len(out))


TRANSFER_CODED = (
    "its body has a transfer coding other than chunked (Transfer-Encoding), which disguise does not decode; "
    "send it with Content-Encoding instead"
)


def transfer_coded(headers: http.Headers) -> bool:
    """Does the body carry a transfer coding other than chunked (`Transfer-Encoding:
    gzip, chunked`)? mitmproxy 11 and 12 accept gzip, deflate and compress before a final
    chunked on a request, undo only the chunking, and forward the coded bytes with the
    header as it came: the body the addon would read is the coded one. Such a request is
    refused (or, where the user allowed unreadable bodies, forwarded as one), never
    read as it stands. Its value is not quoted (client text)."""
    codings = (c.strip().lower() for v in headers.get_all("transfer-encoding") for c in v.split(","))
    return any(c not in ("", "chunked", "identity") for c in codings)


def leaving_headers(r: http.Request) -> list[tuple[str, str]]:
    """The request's headers as the leak guard reads what leaves: every header, then what
    else of its head leaves beside the URL path, each named as its HTTP/2 pseudo-header:
    the method, and the authority where the request carries one (`:authority`, which
    mitmproxy keeps apart from the headers, and an absolute-form HTTP/1 target, which it
    sends on as it came in reverse mode). Read wherever the headers are scanned, masking's
    verdict among them: no pseudo-header is written back (masking sets only the headers
    its API declares, Masked.headers)."""
    headers = list(r.headers.items(multi=True))
    headers.append((":method", r.method))
    if r.authority:
        headers.append((":authority", r.authority))
    return headers


def headers_refused(flow: http.HTTPFlow, transformed: bool, api: Api | None, rules: Rules) -> str | None:
    """Why a request whose body mitmproxy streams may not leave, read from what leaves
    first (its URL and headers: sent upstream before the body); None when they may.
    transformed: an API disguise masks (an original there is always refused)."""
    r = flow.request
    where = place(r.method, r.path, rules)
    hit = leak_scan(r.path, leaving_headers(r), None, rules, api, dest=destination(flow))
    if transformed:
        if hit is not None:
            return f"{where}: an original ({hit}) would have left unmasked"
        coded = transfer_coded(r.headers) and not ctx.options.disguise_fail_open
        return f"{where}: {TRANSFER_CODED}" if coded else None
    if ctx.options.disguise_allow_unknown:
        return None
    if hit is not None:
        return f"{where} is not an endpoint disguise transforms, and it holds an original ({hit})"
    why = registry.refused(r.method, r.path, r.headers.items(multi=True))
    if why is not None:
        return f"{where}: {why}"
    return f"{where}: {TRANSFER_CODED}" if transfer_coded(r.headers) else None


def replace_with_error(flow: http.HTTPFlow, api: Api, message: str, status: int) -> None:
    """At responseheaders: the client gets message in the provider's shape, never
    upstream's body."""
    resp = flow.response
    assert resp is not None
    resp.status_code = status
    resp.reason = ""
    resp.headers.pop("content-encoding", None)
    resp.headers.update(REFUSED_HEADERS)
    chunked(resp)
    resp.stream = Refused(api.error_body(f"disguise: {message}"))


def finish_error(flow: http.HTTPFlow, api: Api, message: str) -> None:
    """At response, for a body that was not streamed: replace it with the error."""
    resp = flow.response
    assert resp is not None
    if isinstance(inner(resp.stream), Refused):
        return
    resp.stream = False
    resp.headers.pop("content-encoding", None)
    resp.headers.pop("transfer-encoding", None)
    resp.headers.update(REFUSED_HEADERS)
    if resp.status_code < 400:
        resp.status_code = 502
    resp.content = api.error_body(f"disguise: {message}")


def inner(stream: object) -> object:
    """A stream callable, unwrapped from the inspection Tee around it."""
    return getattr(stream, "inner", stream)
