"""Large request bodies masked in a worker process (adapter-level): off the event loop and
off its GIL (issue 29).

Masking a 1 MB body in a thread of mitmproxy's process still paused every other stream
11-119 ms: the thread holds the GIL in turns of 5 ms and the event loop waits for each
(the GIL's convoy). Bodies from `disguise_offload_bytes` on go to one worker process
instead (worker.py), a fresh interpreter (`python -P -c`, never a fork of this threaded
process): the proxy's part is sending the body and reading the result, in a thread of
its own that holds the GIL only between reads. The worker is started in the background
when the proxy is up (`running`) with the rules in force, and again at once after it
failed or was recycled: a start and a rule build took the first large body 2.5-5 s when
it was started by that body. Until it is ready (`ready`), a large body is masked in a
thread of the proxy instead, as with disguise_offload_bytes 0, never kept waiting.

Rule sets: each configuration a flow uses gets a generation number; the worker builds it
from the proxy's own loaded mapping set (worker.Spec) the first time a body of that
generation comes, and masks each body with its flow's own generation, checked on the
reply. One body is in the worker at a time; others wait their turn here.

Fail closed: a worker that dies, does not answer within `timeout_for(len(body))`, answers
out of turn or cannot be started gives an OffloadError (the request is refused, even with
disguise_fail_open); the worker is stopped and a fresh one started for the next body."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import socket
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path

from .. import pipeline, turns
from ..apis.registry import Api
from ..base.wirespec import Destination
from ..config import Config
from ..rules.rules import Session
from ..worker import NEED, Job, OffloadError, Spec, decode, offloadable

log = logging.getLogger("disguise")

# The package's parent folder: the worker imports the same disguiselib as the proxy.
_ROOT = str(Path(__file__).resolve().parents[2])
# A worker's start (a fresh interpreter importing the package: about 0.5 s, more when busy)
START_S = 60.0
# Building a rule set in the worker: as long as the proxy's own load may take.
BUILD_S = 600.0
# Masking one body: generous (a hang is a bug; a false refusal costs a user a request).
# The slowest inputs measured (1M tiny array elements) mask at about 5 s/MB on a loaded
# machine; this allows 12 times that.
BASE_S, PER_MB_S = 30.0, 60.0
# After a body this large the worker is stopped (a fresh one starts for the next large
# body): masking 200 MB grows a process by gigabytes it would otherwise keep while idle.
RECYCLE_BYTES = 64 * 1024 * 1024
# Generations remembered here (and built in the worker: worker.KEEP).
_KEEP = 8
# A body sent in pieces as it arrives (Upload) is gathered here up to this many bytes a
# piece: one hand-off to the pool's thread per piece, not per network read.
PIECE = 1 << 20
# A send to the worker waits at most this long (SO_SNDTIMEO): its reading thread takes
# every message at once (worker.serve), so only a worker that hangs or stopped makes a
# send wait; then the body is refused, never the pool's thread stuck for good.
SEND_S = 30.0
# A next turn whose new elements (turns.tail) are at most this many bytes is cut on the
# event loop: 1-2 ms of CPU on a loaded machine for a 1 MB body (the cut's fixed part,
# its sessions and checks, ~1 ms; then ~0.12 ms a KiB of text with an original every 200
# characters), less than a hop to a thread and back costs the request there.
INLINE_TAIL = 4 << 10


def timeout_for(n: int) -> float:
    """How long the worker may take to mask n bytes before it is taken for hung."""
    return BASE_S + PER_MB_S * n / 1e6


def _pieced(result: object, blobs: list[list[bytes]]) -> tuple[object, bytes | None]:
    """A streamed body's verdict (its bytes fields as lists of pieces) and the body itself
    when the verdict is not Masked (sent back last). A Masked body stays in its pieces
    (mitm/streamed.py sends them on one by one); any other bytes field is joined."""
    if isinstance(result, Exception):
        return result, None
    masked = isinstance(result, pipeline.Masked)
    joined = {
        f.name: b"".join(v)
        for f in dataclasses.fields(result)  # type: ignore[arg-type]
        if isinstance(v := getattr(result, f.name), list) and not (masked and f.name == "body")
    }
    if joined:
        result = dataclasses.replace(result, **joined)  # type: ignore[type-var]
    return result, (b"".join(blobs[-1]) if blobs and not masked else None)


class _Failed(Exception):
    """The worker cannot give a verdict (why: the message)."""


class Upload:
    """A request body handed to the worker in pieces while it arrives (mitm/streamed.py):
    the proxy keeps none of it. `Offload.feed` gathers the pieces, `Offload.finish` asks
    for the verdict, `Offload.drop` lets the worker forget a body that will not end."""

    def __init__(self, jid: int) -> None:
        self.jid = jid
        self.size = 0  # bytes fed
        self.batch = bytearray()  # fed, not yet handed to the pool's thread
        self.proc: object | None = None  # the worker process its first piece went to
        self.failed: str | None = None  # why the worker does not hold the whole body


class Offload:
    """The masking worker of one Disguise: `mask` is awaited by the request hook; `close`
    stops the worker (the addon's `done`)."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="disguise-offload")
        # id(config) -> (a weak reference to it, its generation): a configuration no flow
        # uses any more is freed (a rule set of 20,000 literals is some 30 MB; the last
        # _KEEP were kept alive here, 8 times the proxy's rules after a day of edits)
        self._gens: OrderedDict[int, tuple[weakref.ref[Config], int]] = OrderedDict()
        self._count = itertools.count(1)
        self._jobs = itertools.count(1)
        self._lock = threading.Lock()  # the worker process and its connection (the pool's thread, close)
        self._proc: subprocess.Popen | None = None
        self._conn: Connection | None = None
        self._latest: Config | None = None  # the configuration in force (prepare): what a fresh worker builds
        self.live = False  # the proxy is running: a new configuration starts the worker at once
        self.started = 0  # worker processes started (tests, the log)
        self.built: set[int] = set()  # generations the running worker said it built
        self._warming: int | None = None  # the generation `ready` had built in the background
        self.closed = False

    @staticmethod
    def takes(api: Api | None, n: int, threshold: int) -> bool:
        """Is a body of n bytes for api masked in the worker (threshold: disguise_offload_bytes)?"""
        return threshold > 0 and n >= threshold and api is not None and offloadable(api)

    def ready(self, cfg: Config) -> bool:
        """Is the worker running with cfg's rule set built (a body sent now is masked at
        once)? When not, it is started and built in the background (once per rule set),
        and the caller masks this body in a thread of its own, as disguise_offload_bytes=0
        does: a worker started lazily (disguise_offload_warm off), not ready yet after the
        proxy started, or being replaced after a failure costs no body its start and rule
        build (2-3 s on a loaded machine). A body fed to it as it arrives (Spooled) is
        never masked here: it waits for the worker."""
        gen = self.generation(cfg)
        proc = self._proc
        if proc is not None and proc.poll() is None and gen in self.built:
            return True
        if self._warming != gen and not self.closed:
            self._warming = gen
            try:
                self._pool.submit(self._build, gen, cfg)
            except RuntimeError:
                pass  # closed meanwhile
        return False

    def generation(self, cfg: Config) -> int:
        """The generation number of a configuration (the same object, the same number)."""
        got = self._gens.get(id(cfg))
        if got is not None and got[0]() is cfg:
            self._gens.move_to_end(id(cfg))
            return got[1]
        gen = next(self._count)
        self._gens[id(cfg)] = (weakref.ref(cfg), gen)
        while len(self._gens) > _KEEP:
            _, (_, old) = self._gens.popitem(last=False)
            self.built.discard(old)  # never asked for again: its configuration gets a new number
        return gen

    async def mask(
        self, api: Api, raw: bytes, cfg: Config, path: str, headers: list[tuple[str, str]],
        dest: Destination | None = None, start: Session | None = None,
    ) -> pipeline.Verdict:
        """What pipeline.mask_request(api, raw, cfg, path, headers, dest, start) returns,
        computed in the worker; a refusal that is never forwarded (OffloadError's) when it
        cannot give it. Never raises."""
        job = Job(api.name, path, headers, log.getEffectiveLevel(), dest or Destination(), start)
        gen = self.generation(cfg)
        try:
            fut = self._pool.submit(self._roundtrip, gen, cfg, job, raw)
            result, logs = await asyncio.wrap_future(fut)
        except Exception as e:  # noqa: BLE001 - the pool refusing work (closed): fail closed
            return pipeline.Refused.of(OffloadError(f"the masking worker is not available ({type(e).__name__})"))
        for level, msg in logs:
            log.log(level, "%s", msg)
        if isinstance(result, Exception):  # the worker failed (worker.decode), or its message did
            return pipeline.Refused.of(result)
        if isinstance(result, pipeline.Masked) and result.turn is not None:  # its next turn cut here (cut)
            turns.adopt(cfg.rules, result.turn, raw, result.body, cfg.disguises)
        return result  # type: ignore[no-any-return]  # the verdict mask_request returned (worker.decode)

    @staticmethod
    async def cut(
        api: Api, raw: bytes, cfg: Config, path: str, headers: list[tuple[str, str]], dest: Destination | None = None
    ) -> pipeline.Verdict | None:
        """A conversation's next turn cut in the proxy from a request the worker masked
        before (pipeline.cut_request, turns.py: its new elements only, a millisecond or two
        for a 1 MB body, less than the hand-off): where they are at most INLINE_TAIL bytes,
        here on the event loop (no hop to a thread and back), else in a thread; None where
        it is not one (the worker then)."""
        if not turns.holds(cfg.rules, api):
            return None
        at = turns.find(cfg.rules, api, raw, cfg.disguises)  # (raw compared with the turn before once: at)
        if at is None:
            return None  # (no thread asked to find that out)
        if at[3] <= INLINE_TAIL:
            return pipeline.cut_request(api, raw, cfg, path, headers, dest, None, at)
        return await asyncio.to_thread(pipeline.cut_request, api, raw, cfg, path, headers, dest, None, at)

    @staticmethod
    async def in_thread(
        api: Api, raw: bytes, cfg: Config, path: str, headers: list[tuple[str, str]],
        dest: Destination | None = None, start: Session | None = None,
    ) -> pipeline.Verdict:
        """pipeline.mask_request in a thread of the proxy (the worker not ready: `ready`;
        or disguise_offload_bytes 0)."""
        return await asyncio.to_thread(pipeline.mask_request, api, raw, cfg, path, headers, dest, start)

    def upload(self) -> Upload:
        """A body to be fed to the worker as it arrives."""
        return Upload(next(self._jobs))

    def feed(self, up: Upload, data: bytes) -> None:
        """A piece of up's body, on the loop: gathered, and every PIECE bytes handed to the
        pool's thread (sent in order, before anything queued after it)."""
        up.size += len(data)
        up.batch += data
        if len(up.batch) >= PIECE:
            self._hand(up)

    def _hand(self, up: Upload) -> None:
        batch, up.batch = up.batch, bytearray()
        if up.failed is not None:
            return
        try:
            self._pool.submit(self._piece, up, batch)
        except RuntimeError:  # closed
            up.failed = "the proxy is shutting down"

    async def finish(
        self, up: Upload, api: Api, cfg: Config, path: str, headers: list[tuple[str, str]],
        dest: Destination | None = None, start: Session | None = None,
    ) -> tuple[pipeline.Verdict, bytes | None]:
        """mask()'s verdict for the body fed to up, and the body itself when the verdict is
        not Masked (what forwards it as it came needs it; None when the worker failed)."""
        if up.batch:
            self._hand(up)
        job = Job(api.name, path, headers, log.getEffectiveLevel(), dest or Destination(), start)
        gen = self.generation(cfg)
        try:
            fut = self._pool.submit(self._roundtrip, gen, cfg, job, up)
            result, logs = await asyncio.wrap_future(fut)
        except Exception as e:  # noqa: BLE001 - the pool refusing work (closed): fail closed
            return pipeline.Refused.of(OffloadError(f"the masking worker is not available ({type(e).__name__})")), None
        for level, msg in logs:
            log.log(level, "%s", msg)
        if isinstance(result, tuple):  # (verdict, the body) from a streamed job's reply
            result, raw = result
        else:
            raw = None
        if isinstance(result, Exception):
            return pipeline.Refused.of(result), None
        return result, raw

    def drop(self, up: Upload) -> None:
        """up's body will not end (the flow failed): the worker forgets what it holds of it."""
        up.batch = bytearray()
        if up.proc is None or up.failed is not None:
            return
        up.failed = "dropped"
        try:
            self._pool.submit(self._drop, up)
        except RuntimeError:
            pass  # closed: the worker is stopped anyway

    def prepare(self, cfg: Config) -> None:
        """A configuration just took over: once the proxy runs, the worker builds it now,
        in the background, before the next body needs it (started first when none runs)."""
        self._latest = cfg
        if self.live or self._proc is not None:
            self._warm()

    def running(self) -> None:
        """The proxy is up (mitmproxy's `running`): the worker starts now, in the background,
        with the configuration in force (and with each new one after)."""
        self.live = True
        self._warm()

    def _warm(self) -> None:
        """Start the worker (if none runs) and build the latest configuration, in the pool's
        thread: queued before any body that comes meanwhile."""
        cfg = self._latest
        if cfg is None or self.closed:
            return
        gen = self.generation(cfg)
        self._warming = gen  # what `ready` would ask for is on its way
        try:
            self._pool.submit(self._build, gen, cfg)
        except RuntimeError:
            pass  # closed meanwhile

    def close(self) -> None:
        """Stop the worker and refuse what is still queued. The connection is left to the
        pool's thread (it may be reading it): the worker's end closing wakes it."""
        self.closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            proc = self._proc
            if proc is not None and proc.poll() is None:
                proc.kill()
                try:
                    proc.wait(5)  # reaped (it dies at once: SIGKILL)
                except subprocess.TimeoutExpired:
                    pass

    # -- in the pool's thread ---------------------------------------------------------------

    def _piece(self, up: Upload, batch: bytearray) -> None:
        if up.failed is not None:
            return
        try:
            conn, _ = self._ensure()
            if up.proc is None:
                up.proc = self._proc
            elif up.proc is not self._proc:
                up.failed = "it was restarted while the body arrived"
                return
            conn.send(("chunk", 0, up.jid))
            conn.send_bytes(batch)
        except Exception as e:  # noqa: BLE001 - the body is refused at its end (finish); a fresh worker now
            up.failed = str(e) if isinstance(e, _Failed) else "it stopped"
            self._stop()
            self._warm()

    def _drop(self, up: Upload) -> None:
        with self._lock:
            conn = self._conn if self._proc is up.proc else None
        if conn is not None:
            try:
                conn.send(("drop", 0, up.jid))
            except Exception:  # noqa: BLE001 - the next send finds it stopped
                pass

    def _roundtrip(self, gen: int, cfg: Config, job: Job, body: bytes | Upload) -> tuple:
        up = body if isinstance(body, Upload) else None
        raw = body if isinstance(body, bytes) else b""
        size = up.size if up is not None else len(raw)
        jid = up.jid if up is not None else next(self._jobs)
        if up is not None and up.failed is None and up.size and up.proc is not self._proc:
            up.failed = "it was restarted while the body arrived"
        if up is not None and up.failed is not None:  # the worker was restarted already (_piece)
            log.error("disguise: the masking worker failed: %s", up.failed)
            return OffloadError(f"the masking worker failed ({up.failed}); the request was not sent"), []
        try:
            conn, fresh = self._ensure()
            if up is not None:
                conn.send(("end", gen, jid, job, size))
            else:
                conn.send(("mask", gen, jid, job))
                conn.send_bytes(raw)
            wait = timeout_for(size) + (START_S if fresh else 0.0)
            reply = self._reply(conn, wait)
            if reply[0] == NEED and reply[1] == gen:
                conn.send(("build", gen, Spec.of(cfg)))
                reply = self._reply(conn, BUILD_S + wait)
            if reply[0] == "masked" and reply[1] == gen:
                self.built.add(gen)
            if reply[0] == "error" and reply[1] == gen:
                raise _Failed(str(reply[2]))
            if reply[0] != "masked" or reply[1] != gen or reply[2] != jid:
                raise _Failed("it answered out of turn")  # never a result of another set or body
            if up is None:
                blobs: list = [self._blob(conn, wait) for _ in range(reply[5])]
            else:  # each in pieces (worker.PIECE): a masked body is handed on as it came, never joined here
                blobs = [[self._blob(conn, wait) for _ in range(c)] for c in reply[6]]
            if size >= RECYCLE_BYTES:
                self._stop()  # what masking a huge body grew the worker to goes back to the system
                self._warm()  # and a fresh one starts now, not at the next body
            if up is None:
                return decode(reply[3], blobs, raw), reply[4]
            return _pieced(decode(reply[3], blobs, b""), blobs), reply[4]
        except Exception as e:  # noqa: BLE001 - whatever failed, this body has no verdict: refused
            why = (
                str(e)
                if isinstance(e, _Failed)
                else "it stopped"
                if isinstance(e, (EOFError, OSError))
                else (type(e).__name__)
            )
            self._stop()
            self._warm()  # a fresh worker for the next body, started now (once: a failing start only logs)
            log.error("disguise: the masking worker failed: %s; it is restarted for the next body", why)
            return OffloadError(f"the masking worker failed ({why}); the request was not sent"), []

    def _build(self, gen: int, cfg: Config) -> None:
        try:
            t0 = time.monotonic()
            conn, _ = self._ensure()
            conn.send(("build", gen, Spec.of(cfg)))
            reply = self._reply(conn, BUILD_S)
            if reply[0] != "built" or reply[1] != gen:
                raise _Failed("it did not build the rule set")
            self.built.add(gen)
            log.info("disguise: masking worker ready (rule set %d built in %.1f s)", gen, time.monotonic() - t0)
        except Exception as e:  # noqa: BLE001 - whatever failed, the next body starts a fresh worker
            self._stop()
            if not self.closed:
                log.warning("disguise: the masking worker could not build the new rule set (%s)", type(e).__name__)
        finally:
            if self._warming == gen:
                self._warming = None  # built, or failed: a later body may ask again

    def _reply(self, conn: Connection, timeout: float) -> tuple:
        if not conn.poll(timeout):
            raise _Failed(f"no answer within {timeout:.0f} s")
        msg = conn.recv()
        if not isinstance(msg, tuple) or len(msg) < 2:
            raise _Failed("it answered out of turn")
        return msg

    def _blob(self, conn: Connection, timeout: float) -> bytes:
        if not conn.poll(timeout):
            raise _Failed(f"no answer within {timeout:.0f} s")
        return conn.recv_bytes()

    def _ensure(self) -> tuple[Connection, bool]:
        """The worker's connection, starting the worker when none runs; (conn, just started)."""
        with self._lock:
            if self.closed:
                raise _Failed("the proxy is shutting down")
            if self._conn is not None and self._proc is not None and self._proc.poll() is None:
                return self._conn, False
            self._stop_locked()
            ours, theirs = socket.socketpair()
            ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", int(SEND_S), 0))
            code = (
                f"import sys; sys.path.insert(0, {_ROOT!r}); from disguiselib.worker import main; "
                f"main({theirs.fileno()})"
            )
            try:
                self._proc = subprocess.Popen(
                    [sys.executable, "-P", "-c", code], pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, start_new_session=True,
                )  # fmt: skip
            except OSError as e:
                ours.close()
                raise _Failed(f"it could not be started ({type(e).__name__})") from e
            finally:
                theirs.close()
            self._conn = Connection(ours.detach())
            self.started += 1
            log.info("disguise: masking worker started (pid %d): large request bodies are masked there",
                     self._proc.pid)  # fmt: skip
            return self._conn, True

    def _stop(self) -> None:
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        proc, conn, self._proc, self._conn = self._proc, self._conn, None, None
        self.built = set()
        if conn is not None:
            conn.close()
        if proc is not None and proc.poll() is None:
            proc.kill()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pass

    @property
    def pid(self) -> int | None:
        """The running worker's process id (tests), None when none runs."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None
