"""Helpers for the integration tests: a fake LLM upstream, a mitmdump process, SSE bytes.

Everything here is real I/O on 127.0.0.1: a threaded HTTP/1.1 server that records what
it receives and answers in small separate writes, and a `mitmdump` process running
the addon in reverse-proxy mode (forked from tests/mitmdump_zygote.py, which imported
mitmproxy once; `DISGUISE_TEST_EXEC=1` exec's each one instead).
"""

from __future__ import annotations

import atexit
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from mitmproxy.net import encoding

REPO = Path(__file__).resolve().parents[1]
ADDON = REPO / "addon" / "disguise.py"
MITMDUMP = Path(sys.executable).parent / "mitmdump"

# A port for a process that binds it later: the balancer's own pick, from below the
# kernel's ephemeral range (deploy/balance.py says why)
sys.path.insert(0, str(REPO / "deploy"))
from balance import free_port  # noqa: E402, F401  (for the tests)

# -- SSE ---------------------------------------------------------------------------------


def sse(data: dict, *, compact: bool = True, name: str | None = None) -> bytes:
    """One Anthropic-style SSE event. compact=True is the wire shape the API sends (the
    addon's fast path); compact=False uses `", "`/`": "` separators (its slow path)."""
    seps = (",", ":") if compact else (", ", ": ")
    body = json.dumps(data, separators=seps, ensure_ascii=False)
    return f"event: {name or data['type']}\ndata: {body}\n\n".encode()


def split_events(body: bytes) -> list[bytes]:
    """Raw events of an SSE body written with LF line ends (each with its blank line)."""
    out = []
    pos = 0
    while pos < len(body):
        end = body.find(b"\n\n", pos)
        if end < 0:
            out.append(body[pos:])
            break
        out.append(body[pos : end + 2])
        pos = end + 2
    return out


@dataclass
class Event:
    raw: bytes
    name: str | None
    data: dict


def parse_events(body: bytes) -> list[Event]:
    """Parse an SSE body; every event must carry exactly one JSON `data:` line."""
    events = []
    for raw in split_events(body):
        name = None
        data = None
        for line in raw.decode("utf-8").split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                assert data is None, f"event with two data lines: {raw!r}"
                data = json.loads(line[5:])
        assert data is not None, f"event without data: {raw!r}"
        events.append(Event(raw, name, data))
    return events


def cut(chunks: Iterable[bytes], seed: int, merge_every: int = 5) -> list[bytes]:
    """Re-cut a byte stream: every chunk is split at a pseudo-random offset, and now and
    then the tail of one chunk is merged with the next (so framing cannot rely on reads
    matching events)."""
    rnd = random.Random(seed)
    pieces: list[bytes] = []
    carry = b""
    for n, c in enumerate(chunks):
        c = carry + c
        carry = b""
        if len(c) > 1:
            k = rnd.randrange(1, len(c))
            pieces.append(c[:k])
            c = c[k:]
        if merge_every and n % merge_every == merge_every - 1:
            carry = c
        else:
            pieces.append(c)
    if carry:
        pieces.append(carry)
    return [p for p in pieces if p]


class Compressor:
    """Incremental Content-Encoding for an upstream that ignores `identity`: each
    `piece()` is flushed so the client can decode it at once."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        if encoding == "gzip":
            self._c = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._c = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS)
        elif encoding == "br":
            import brotli

            self._c = brotli.Compressor()
        elif encoding == "zstd":
            try:
                import zstandard

                self._c = zstandard.ZstdCompressor().compressobj()
                self._zflush = lambda: self._c.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
            except ImportError:
                from backports import zstd  # type: ignore[import-not-found]

                self._c = zstd.ZstdCompressor()
                self._bz = zstd
        else:
            raise ValueError(encoding)

    def piece(self, data: bytes) -> bytes:
        e = self.encoding
        if e in ("gzip", "deflate"):
            return self._c.compress(data) + self._c.flush(zlib.Z_SYNC_FLUSH)
        if e == "br":
            return self._c.process(data) + self._c.flush()
        if hasattr(self, "_zflush"):
            return self._c.compress(data) + self._zflush()
        return self._c.compress(data, mode=self._bz.ZstdCompressor.FLUSH_BLOCK)

    def finish(self) -> bytes:
        if self.encoding == "br":
            return self._c.finish()
        return self._c.flush()


def zstd_available() -> bool:
    try:
        import zstandard  # noqa: F401

        return True
    except ImportError:
        try:
            from backports import zstd  # type: ignore[import-not-found]  # noqa: F401

            return True
        except ImportError:
            return False


# -- JSON helpers ------------------------------------------------------------------------


def find_object_span(text: str, target: object) -> tuple[int, int]:
    """Where the JSON object equal to target is serialized in text (exactly once)."""
    dec = json.JSONDecoder()
    found = []
    for m in re.finditer(r"\{", text):
        try:
            obj, end = dec.raw_decode(text, m.start())
        except ValueError:
            continue
        if obj == target:
            found.append((m.start(), end))
    assert len(found) == 1, f"object found {len(found)} times"
    return found[0]


def all_strings(doc: object) -> list[str]:
    """Every key and string value in a parsed JSON document."""
    out: list[str] = []
    stack = [doc]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            out.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
        elif isinstance(x, str):
            out.append(x)
    return out


def without_thinking(doc: object) -> object:
    """doc with every thinking / signature object (blocks, deltas, SDK events) removed."""
    drop = {"thinking", "redacted_thinking", "thinking_delta", "signature_delta", "signature"}
    if isinstance(doc, dict):
        if doc.get("type") in drop:
            return None
        return {k: without_thinking(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [without_thinking(v) for v in doc]
    return doc


# -- fake upstream -----------------------------------------------------------------------


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    raw: bytes  # body as received (possibly content-encoded)
    body: bytes  # body after content decoding

    @property
    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class Reply:
    """How the fake upstream answers: body pieces, each a separate write + flush."""

    pieces: Iterable[bytes]  # a generator may block between pieces (to gate a test)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    framing: str = "chunked"  # "chunked" | "close" (no length, connection closes) | "length"
    delay: float = 0.002  # between pieces, so the proxy sees separate reads
    abort: bool = False  # cut the connection after the pieces, without ending the body


Handler = Callable[[Recorded], Reply]


class FakeUpstream:
    """A threaded HTTP/1.1 server on 127.0.0.1:0. Handlers are chosen by the request
    body's "model" field (never masked by the addon)."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        # every request's line and headers as they came, before its body was read (a request
        # whose body never ends is in none of `requests`)
        self.heads: list[tuple[str, str, dict[str, str]]] = []
        self.handlers: dict[str, Handler] = {}
        self._lock = threading.Lock()
        outer = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 30  # an idle keep-alive connection ends by itself

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                outer._serve(self)

            do_GET = do_PATCH = do_DELETE = do_PUT = do_POST

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeUpstream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(10)

    def on(self, key: str, handler: Handler) -> None:
        """Answer requests whose body's "model" is key (or, without a model, whose path is)."""
        self.handlers[key] = handler

    def for_model(self, model: str) -> list[Recorded]:
        out = []
        for r in list(self.requests):
            try:
                if r.json.get("model") == model:
                    out.append(r)
            except ValueError:
                pass
        return out

    def for_path(self, path: str) -> list[Recorded]:
        return [r for r in list(self.requests) if r.path == path]

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        headers = {k.lower(): v for k, v in h.headers.items()}
        with self._lock:
            self.heads.append((h.command, h.path, headers))
        if headers.get("transfer-encoding", "").lower() == "chunked":
            raw = b""
            while True:
                size = int(h.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while h.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                raw += h.rfile.read(size)
                h.rfile.readline()
        else:
            raw = h.rfile.read(int(headers.get("content-length", "0")))
        enc = headers.get("content-encoding", "").lower()
        try:
            body = encoding.decode(raw, enc) if enc else raw
        except ValueError:
            body = raw
        rec = Recorded(h.command, h.path, headers, raw, body)
        with self._lock:
            self.requests.append(rec)
        try:
            model = rec.json.get("model")
        except ValueError:
            model = None
        path = rec.path.split("?")[0]
        handler = self.handlers.get(model) or self.handlers.get(path)  # type: ignore[arg-type]
        if handler is None:
            reply = Reply([json.dumps({"error": f"no scenario {model!r}"}).encode()],
                          status=500, framing="length")  # fmt: skip
        else:
            reply = handler(rec)
        self._write(h, reply)

    @staticmethod
    def _write(h: BaseHTTPRequestHandler, reply: Reply) -> None:
        h.send_response(reply.status)
        for k, v in reply.headers.items():
            h.send_header(k, v)
        if reply.framing == "chunked":
            h.send_header("Transfer-Encoding", "chunked")
        elif reply.framing == "length":
            reply.pieces = list(reply.pieces)
            h.send_header("Content-Length", str(sum(map(len, reply.pieces))))
        else:
            h.send_header("Connection", "close")
            h.close_connection = True
        h.end_headers()
        h.wfile.flush()
        try:
            for p in reply.pieces:
                if reply.framing == "chunked":
                    h.wfile.write(b"%x\r\n%s\r\n" % (len(p), p))
                else:
                    h.wfile.write(p)
                h.wfile.flush()
                if reply.delay:
                    time.sleep(reply.delay)
            if reply.abort:
                h.connection.shutdown(socket.SHUT_RDWR)
                h.close_connection = True
            elif reply.framing == "chunked":
                h.wfile.write(b"0\r\n\r\n")
                h.wfile.flush()
        except OSError:  # the proxy went away (BrokenPipe, ConnectionReset)
            h.close_connection = True


# -- mitmdump ----------------------------------------------------------------------------

_LISTENING = re.compile(r"listening at (?:http://)?127\.0\.0\.1:(\d+)")


def mitmdump_cmd(upstream_port: int, confdir: Path, mappings: Path, *extra: str) -> list[str]:
    """The addon in reverse mode in front of upstream_port. The masking worker starts with
    the first body that needs it (disguise_offload_warm=false: its start costs each
    mitmdump about 0.4 s of CPU, and most tests send no large body); a test that gives
    any disguise_offload_* option itself (the worker's tests) runs with what it says."""
    lazy = [] if any("disguise_offload_" in a for a in extra) else ["--set", "disguise_offload_warm=false"]
    return [
        str(MITMDUMP),
        "--mode", f"reverse:http://127.0.0.1:{upstream_port}",
        "--listen-host", "127.0.0.1",
        "--listen-port", "0",
        "--set", f"confdir={confdir}",
        "-s", str(ADDON),
        "--set", f"disguise_mappings={mappings}",
        *lazy,
        *extra,
    ]  # fmt: skip


def clean_env() -> dict[str, str]:
    """The environment mitmdump runs in (no proxy variables); a copy to change."""
    return _env()


class Proxy:
    """A fake upstream and a mitmdump in reverse mode in front of it."""

    def __init__(self, upstream: FakeUpstream, mitm: Mitmdump) -> None:
        self.upstream = upstream
        self.mitm = mitm
        self.port = mitm.port
        self.base_url = f"http://127.0.0.1:{mitm.port}"


@contextmanager
def running_proxy(tmp: Path, mappings: dict, *extra: str, upstream: FakeUpstream | None = None) -> Iterator[Proxy]:
    """The shared harness of the integration tests: a mitmdump running the addon with
    these mappings in reverse mode in front of a FakeUpstream (its own, or the one
    given); mitmdump's last output is printed when it stops (pytest shows it with a
    failing test's report)."""
    if upstream is None:
        with FakeUpstream() as up, running_proxy(tmp, mappings, *extra, upstream=up) as proxy:
            yield proxy
        return
    mitm = Mitmdump(mitmdump_cmd(upstream.port, tmp / "conf", write_mappings(tmp, mappings), *extra))
    try:
        yield Proxy(upstream, mitm)
    finally:
        mitm.stop()
        print(mitm.output[-4000:])


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for k in list(env):
        if k.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
            del env[k]
    env["PYTHONUNBUFFERED"] = "1"
    return env


# -- the fork server (tests/mitmdump_zygote.py) --------------------------------------------

ZYGOTE = Path(__file__).resolve().parent / "mitmdump_zygote.py"


class Forked:
    """A mitmdump forked by the fork server, seen as subprocess.Popen shows a child: pid,
    poll/wait/returncode (-N: killed by signal N), terminate/kill/send_signal, and its
    output (stdout and stderr together) as text in `stdout`."""

    def __init__(self, pid: int, stdout: object) -> None:
        self.pid = pid
        self.stdout = stdout
        self.returncode: int | None = None
        self._ended = threading.Event()

    def _exited(self, code: int) -> None:
        self.returncode = code
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(["mitmdump"], timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class _Zygote:
    """The test process's one fork server (started with the first mitmdump; it ends with
    this process) and the thread that reads what it says."""

    _lock = threading.Lock()
    _instance: _Zygote | None = None

    def __init__(self) -> None:
        from mitmdump_zygote import recv

        self._recv = recv
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.env = _env()
        self.proc = subprocess.Popen([sys.executable, str(ZYGOTE), str(theirs.fileno())], cwd=REPO, env=self.env,
                                     stdin=subprocess.DEVNULL, pass_fds=[theirs.fileno()])  # fmt: skip
        theirs.close()
        self.sock = ours
        msg, _ = recv(ours)
        assert "ready" in msg, msg
        self._spawn_lock = threading.Lock()
        self._replies: list[dict] = []
        self._reply = threading.Condition()
        self._children: dict[int, Forked] = {}
        self._early: dict[int, int] = {}
        threading.Thread(target=self._read, daemon=True).start()
        atexit.register(self.close)

    def close(self) -> None:
        """(At exit: the fork server kills the mitmdumps still running, and ends.) The
        socket is shut down, not only closed: the reading thread is blocked in recv on
        it, which keeps it open, and the fork server saw no end (10 s at every exit)."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    @classmethod
    def get(cls) -> _Zygote:
        with cls._lock:
            if cls._instance is None or cls._instance.proc.poll() is not None:
                cls._instance = cls()
            return cls._instance

    def _read(self) -> None:
        while True:
            try:
                msg, _ = self._recv(self.sock)
            except (EOFError, OSError):
                return
            if "exit" in msg:
                with self._reply:
                    child = self._children.pop(msg["exit"], None)
                    if child is None:
                        self._early[msg["exit"]] = msg["code"]
                if child is not None:
                    child._exited(msg["code"])
            else:
                with self._reply:
                    self._replies.append(msg)
                    self._reply.notify_all()

    def spawn(self, cmd: list[str], env: dict[str, str]) -> Forked:
        from mitmdump_zygote import send

        r, w = os.pipe()
        devnull = os.open(os.devnull, os.O_RDONLY)
        try:
            with self._spawn_lock:
                send(self.sock, {"argv": cmd, "env": env, "cwd": str(REPO)}, [devnull, w])
                with self._reply:
                    if not self._reply.wait_for(lambda: self._replies, 300):  # (a fork on a loaded machine)
                        raise RuntimeError("the mitmdump fork server did not answer")
                    msg = self._replies.pop(0)
                    if "pid" not in msg:
                        raise RuntimeError(f"the mitmdump fork server: {msg}")
                    child = Forked(msg["pid"], open(r, encoding="utf-8", errors="replace"))  # noqa: SIM115
                    early = self._early.pop(child.pid, None)
                    if early is None:
                        self._children[child.pid] = child
            if early is not None:
                child._exited(early)
            return child
        finally:
            os.close(w)
            os.close(devnull)


def forkable(cmd: list[str], env: dict[str, str]) -> bool:
    """The fork server can start it as exec would: this venv's mitmdump, and an environment
    whose interpreter settings (PYTHON*) are the fork server's (its sys.path, hash seed and
    flags were set by them at its start)."""
    if os.environ.get("DISGUISE_TEST_EXEC") or not cmd or Path(cmd[0]) != MITMDUMP:
        return False
    base = _Zygote._instance.env if _Zygote._instance is not None else _env()
    py = lambda e: {k: v for k, v in e.items() if k.startswith("PYTHON")}
    return py(env) == py(base)


def start_mitmdump(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.Popen | Forked:
    """A mitmdump from the fork server where it can be (forkable), else exec'd as ever;
    stdout (stderr with it) as text either way."""
    env = env if env is not None else _env()
    if forkable(cmd, env):
        return _Zygote.get().spawn(cmd, env)
    return subprocess.Popen(
        cmd, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, encoding="utf-8", errors="replace",
    )  # fmt: skip


class Mitmdump:
    """A running mitmdump; `port` is where it listens, `output` what it printed."""

    def __init__(self, cmd: list[str], startup_timeout: float = 120, env: dict[str, str] | None = None) -> None:
        self._lines: list[str] = []
        self._ready = threading.Event()
        self.port: int | None = None
        self.proc = start_mitmdump(cmd, env)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            deadline = time.monotonic() + startup_timeout
            while not self._ready.wait(0.05):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self._reader.join(5)
                    raise RuntimeError(f"mitmdump did not start:\n{self.output}")
        except BaseException:
            self.stop()
            raise

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.append(line)
            if self.port is None:
                m = _LISTENING.search(line)
                if m:
                    self.port = int(m.group(1))
                    self._ready.set()

    @property
    def output(self) -> str:
        return "".join(self._lines)

    def saw(self, text: str | re.Pattern[str], timeout: float = 15.0) -> bool:
        """`text` (or a match of the pattern) is in what it printed, or comes within timeout. mitmdump writes a hook's
        log line before the client has its response, but the thread reading the pipe may
        not have read it yet on a loaded machine (stop 57's CI: a reload's warning, printed
        40 ms before the test looked, not in `output` when it did)."""
        found = (lambda: text.search(self.output) is not None) if isinstance(text, re.Pattern) else (lambda: text in self.output)
        deadline = time.monotonic() + timeout
        while not found():
            if time.monotonic() > deadline or not self._reader.is_alive():
                return found()
            time.sleep(0.02)
        return True

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._reader.join(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def run_mitmdump(cmd: list[str], timeout: float = 30) -> tuple[int | None, str]:
    """Run a mitmdump that is expected to exit by itself. (None, output) if it did not
    exit within timeout (it is then killed).

    A mitmdump that printed "Error logged during startup, exiting..." is exiting with
    status 1; in a few runs in a hundred on mitmproxy 11 its process then dies of a
    SIGSEGV in a tokio thread of mitmproxy_rs during interpreter shutdown (the same
    crash as mitmproxy/mitmproxy#7409; reproduced without this addon's code on the
    stack). That is read as the 1 it was exiting with; any other crash is returned as
    it is.

    The bound is at least 120 s whatever the caller says: such a mitmdump exits within a
    second or two on an idle machine, but took past 30 s on a loaded two-core one (and a
    bound that is too short fails a correct product, one that is long costs nothing)."""
    timeout = max(timeout, 120.0)
    proc = start_mitmdump(cmd)
    chunks: list[str] = []
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: chunks.append(proc.stdout.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)
            reader.join(30)
            return None, "".join(chunks)
        reader.join(30)
        out = "".join(chunks)
        if proc.returncode == -11 and out.rstrip().endswith("Error logged during startup, exiting..."):
            return 1, out
        return proc.returncode, out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        proc.stdout.close()


# -- additions for the OpenAI integration tests --------------------------------------------


def sse_data(data: dict | str, *, compact: bool = True) -> bytes:
    """One data-only SSE event, the OpenAI Chat wire shape; a str goes out as is
    (`sse_data("[DONE]")`). compact=True is the API's own separators (the addon's fast
    path for single-choice content chunks); compact=False a spaced variant."""
    if isinstance(data, str):
        return f"data: {data}\n\n".encode()
    seps = (",", ":") if compact else (", ", ": ")
    return f"data: {json.dumps(data, separators=seps, ensure_ascii=False)}\n\n".encode()


@dataclass
class RawEvent:
    raw: bytes
    name: str | None
    data: str | None  # the data lines joined with "\n"; None for an event without data


def raw_events(body: bytes) -> list[RawEvent]:
    """The events of an SSE body written with LF line ends, data left unparsed (so a
    `[DONE]` sentinel survives); comment-only blocks are skipped."""
    out = []
    for raw in split_events(body):
        name = None
        data: list[str] = []
        for line in raw.decode("utf-8").split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if name is None and not data:
            continue
        out.append(RawEvent(raw, name, "\n".join(data) if data else None))
    return out


def http_post(
    port: int, path: str, body: bytes, headers: dict[str, str] | None = None, timeout: float = 20
) -> tuple[int, dict[str, str], bytes]:
    """POST with http.client to 127.0.0.1:port: the response bytes exactly as sent."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, body=body,
                     headers={"content-type": "application/json", **(headers or {})})  # fmt: skip
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        conn.close()


def write_mappings(tmp: Path, mappings: dict, name: str = "mappings.yaml") -> Path:
    """A mapping set written as YAML into tmp; returns its path."""
    import yaml

    path = tmp / name
    path.write_text(yaml.safe_dump(mappings, allow_unicode=True), encoding="utf-8")
    return path
