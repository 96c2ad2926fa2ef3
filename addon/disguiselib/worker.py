"""The masking worker's side (sans I/O but for its one connection): large request bodies
are masked in a process of their own, so that neither the event loop nor its GIL waits
for them (mitm/offload.py starts it and talks to it).

The worker holds rule sets built from the same data as the proxy's (`Spec`: the loaded
mapping set and the fakes key; compiled rule objects cannot be pickled), each under a
generation number the proxy gives. A request names its generation; a worker that has not
built that generation says so (`NEED`) and is sent its spec first, so a body is always
masked with exactly the rule set of its flow, never a stale one. It runs the one path
(`pipeline.mask_request`: masking and the leak guard) and sends back what that returns,
as plain picklable data (`encode`/`decode`): the result, or an exception as its class
name and message. Log records the masking writes are sent back with it and logged by the
proxy, under the same rules (they are the messages the same code writes in-process).

Messages (multiprocessing.connection framing, pickled tuples):
  proxy -> worker  ("build", gen, Spec)              -> ("built", gen) | ("error", gen, text)
                   ("mask", gen, job_id, Job), body   -> ("masked", gen, job_id, payload, logs, n), n bytes
                                                      | (NEED, gen): then ("build", gen, Spec) masks it
                   ("chunk", 0, job_id), bytes        -> no answer: a piece of a body that is still arriving
                   ("end", gen, job_id, Job, size)    -> what "mask" answers, for the pieces sent so far,
                                                         with counts: each of the n bytes sent in so many pieces
                   ("drop", 0, job_id)                -> no answer: the pieces are thrown away
A body sent in pieces (one the proxy streams, mitm/streamed.py) is held here only: its
reply never says SAME (every bytes field is sent back), and a verdict other than Masked
(a refusal that may fail open, NotOurs: what forwards the body as it came) sends the
body itself back as the last of its n bytes. Such a body is masked as a received.Received
(its bytes let go once decoded, made again from the text when sent back); once masking
changed it, what came is no longer held, and a refusal that could fail open after that
is refused closed (Refusal.NEVER).
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import os
import queue
import threading
from collections import OrderedDict
from dataclasses import dataclass

from . import errors, pipeline
from .apis.registry import BY_NAME, Api
from .base.received import Received, as_received
from .base.wirespec import Destination
from .config import Config, compiled
from .errors import NeverForward
from .rules.mappings import MappingSet
from .rules.rules import Session

log = logging.getLogger("disguise")

NEED = "need"  # the worker's answer to a generation it has not built
# Generations a worker keeps built: the set in force and the one a running flow may still
# have started with (a flow reads one set from its headers to its end).
KEEP = 4
# The worker's priority below the proxy's (a nice value added to it): a body being masked
# takes a core for 0.1-0.3 s per MB, and on a loaded machine the event loop then waited
# for a CPU behind it (bench/stalls.py: the loop on the run queue while the worker ran).
# The scheduler now runs the loop first when both are ready; the body takes longer only
# when the CPUs are busy.
NICE = 10
# The messages whose handling masks a body: the cyclic collector is paused for each. Masking
# makes many small tuples and lists, and each full collection walked the body's whole
# document again (a million hex ids, 54k of them candidates: 12 % of the request, 1.10-1.14
# -> 0.97-1.04 s in process; the 1 MB bodies: no difference). Masking breaks the cycles it
# makes itself (a memo held by its own closure is cleared); what the collector would find
# meanwhile waits for the body's end, when it runs again.
MASKS = ("mask", "end")
# The pieces a streamed body's results are sent back in (the reply's counts say how many
# per bytes field).
PIECE = 4 << 20
# A bytes field of the result: the request's own body (nothing changed: not sent back), or
# the i-th bytes sent after the reply.
SAME, BLOB = "same", "blob"


class OffloadError(NeverForward):
    """The masking worker could not give a verdict (it died, hung, or could not start):
    the request is refused, even with disguise_fail_open, and never sent unmasked."""


@dataclass(frozen=True)
class Spec:
    """What the worker builds a rule set from: the proxy's own loaded mapping set (no file
    is read again, so no file written meanwhile can differ), the fakes key and the
    numbering key (Rules.numbers_key: a request masked here is numbered as in the proxy)."""

    mappings: MappingSet
    fakes_key: bytes | None
    paths: tuple[str, ...]
    defaults: bool
    numbers_key: bytes | None = None

    @classmethod
    def of(cls, cfg: Config) -> Spec:
        return cls(cfg.rules.mappings, cfg.fakes_key, cfg.paths, cfg.defaults, cfg.rules.numbers_key)


def build(spec: Spec) -> Config:
    """The rule set of spec, as config.build_config compiles it."""
    rules, disguises = compiled(spec.mappings, spec.fakes_key, False, spec.numbers_key)  # it masks requests only
    return Config(rules, (), spec.paths, spec.defaults, (), disguises, spec.fakes_key)


@dataclass(frozen=True)
class Job:
    """One request to mask: what the adapter hands pipeline.mask_request but the body
    (sent on its own, unpickled), the API by name."""

    api: str
    path: str
    headers: list[tuple[str, str]]
    level: int = logging.WARNING  # the proxy's level for the "disguise" logger
    dest: Destination = Destination()  # where the request goes (its credential slots)
    start: Session | None = None  # the session of headers that left before the body (mask_request's start)


def offloadable(api: Api) -> bool:
    """Can the worker find this API by its name (registry.BY_NAME)?"""
    return BY_NAME.get(api.name) is api


def mask(cfg: Config, job: Job, raw: bytes | Received) -> object:
    """The one path, in the worker: the verdict pipeline.mask_request returns. What it
    remembers of the request for the conversation's next turn (turns.py) goes back in
    it (Masked.turn); the proxy keeps that and cuts the next turn itself (Offload.cut),
    so the worker keeps none of it: not the bytes as they came and masked, up to
    turns.MAX_BYTES of them, twice over in two processes."""
    try:
        return pipeline.mask_request(BY_NAME[job.api], raw, cfg, job.path, job.headers, job.dest, job.start)
    finally:
        cfg.rules.found.turns = None


def encode(result: object, raw: bytes, same: bool = True) -> tuple[tuple, list[bytes]]:
    """result as plain picklable data and the bytes sent beside it unpickled (a large
    body costs no copy under the proxy's GIL): ("exc", class name, message) for an
    exception; else ("ok", result, fields) where each bytes field of the result is
    (SAME,) when it is the request's body itself (nothing changed: not sent back; never
    when not same: the proxy does not hold the body) or (BLOB, i) for the i-th bytes sent
    beside it."""
    if isinstance(result, BaseException):
        return ("exc", type(result).__name__, str(result) if isinstance(result, errors.DisguiseError) else ""), []
    blobs: list[bytes] = []
    moved: dict[str, tuple] = {}
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        for f in dataclasses.fields(result):
            v = getattr(result, f.name)
            if v is raw and same:
                moved[f.name] = (SAME,)
            elif isinstance(v, bytes):
                moved[f.name] = (BLOB, len(blobs))
                blobs.append(v)
        if moved:
            result = dataclasses.replace(result, **moved)  # type: ignore[type-var]
    return ("ok", result, tuple(moved)), blobs


def decode(payload: tuple, blobs: list[bytes], raw: bytes) -> object:
    """encode's result back: the result object with its bytes fields in place, or the
    exception (the project's own by class, anything else an internal error by its name)."""
    if payload[0] == "exc":
        _, name, msg = payload
        cls = getattr(errors, name, None)
        if isinstance(cls, type) and issubclass(cls, errors.DisguiseError):
            return cls(msg)
        return OffloadError(f"internal error in the masking worker ({name})")
    _, result, moved = payload
    if moved:
        back = {}
        for name in moved:
            mark = getattr(result, name)
            back[name] = raw if mark[0] == SAME else blobs[mark[1]]
        result = dataclasses.replace(result, **back)
    return result


class _Collect(logging.Handler):
    """The log records of one job, sent back to the proxy to log."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if record.exc_info and record.levelno <= logging.DEBUG:
            msg += "\n" + logging.Formatter().formatException(record.exc_info)
        self.records.append((record.levelno, msg))


class Worker:
    """The worker's state: the rule sets it built, by generation, and a job waiting for
    its generation's spec."""

    def __init__(self) -> None:
        self.built: OrderedDict[int, Config] = OrderedDict()
        self.pending: tuple[int, object, Job, bytes | Received, bool] | None = None
        self.uploads: dict[object, bytearray] = {}  # bodies arriving in pieces, by job id

    def handle(self, msg: tuple, raw: bytes = b"") -> tuple[tuple, list[bytes]] | None:
        """One message (and the bytes of a "mask" or "chunk"): the reply and the bytes sent
        after it; None: no reply."""
        kind, gen = msg[0], msg[1]
        if kind == "chunk":
            self.uploads.setdefault(msg[2], bytearray()).extend(raw)
            return None
        if kind == "drop":
            self.uploads.pop(msg[2], None)
            return None
        if kind == "end":
            buf = self.uploads.pop(msg[2], bytearray() if msg[4] == 0 else None)
            if buf is None or len(buf) != msg[4]:
                got = "none" if buf is None else f"{len(buf)} bytes"
                return ("error", gen, f"the body arrived incomplete ({got} of {msg[4]})"), []
            # handed over as gathered (no copy): masking lets it go once decoded, and no
            # name here holds it meanwhile (a 200 MB body: once more the body throughout)
            body = Received(buf)
            del buf
            if gen not in self.built:
                self.pending = (gen, msg[2], msg[3], body, True)
                return (NEED, gen), []
            return self._mask(gen, msg[2], msg[3], body, True)
        if kind == "build":
            try:
                self.built[gen] = build(msg[2])
            except Exception as e:  # noqa: BLE001 - said to the proxy, which refuses
                self.pending = None
                return ("error", gen, errors.reason(e)), []
            while len(self.built) > KEEP:
                self.built.popitem(last=False)
            pending, self.pending = self.pending, None
            if pending is not None and pending[0] == gen:
                return self._mask(*pending)
            return ("built", gen), []
        if kind == "mask":
            if gen not in self.built:
                self.pending = (gen, msg[2], msg[3], raw, False)
                return (NEED, gen), []
            return self._mask(gen, msg[2], msg[3], raw)
        return ("error", gen, f"unknown message {kind!r}"), []

    def _mask(
        self, gen: int, job_id: object, job: Job, raw: bytes | Received, streamed: bool = False
    ) -> tuple[tuple, list[bytes]]:
        """streamed: the proxy does not hold raw (sent in pieces, held here as a Received):
        nothing is SAME, and a verdict that is not Masked sends raw back last (for what
        forwards it as it came), made again from its text where masking let it go."""
        cfg = self.built[gen]
        self.built.move_to_end(gen)
        collect, level = _Collect(), log.level
        log.addHandler(collect)
        log.setLevel(job.level)
        try:
            result = mask(cfg, job, raw)
            came = as_received(raw)
            if came is None and (
                isinstance(result, pipeline.NotOurs) or isinstance(result, pipeline.Refused) and result.may_fail_open
            ):
                # what came was let go once masking changed it: nothing can forward it as
                # it came (fail-open): refused, never sent unmasked
                why = result.reason + " (the body as it came is no longer held: not forwarded)"
                result = pipeline.Refused(why, pipeline.Refusal.NEVER)
            payload, blobs = encode(result, came or b"", same=not streamed)
            if streamed and not isinstance(result, pipeline.Masked):
                blobs.append(came or b"")
            del result, came
        finally:
            log.removeHandler(collect)
            log.setLevel(level)
        if not streamed:
            return ("masked", gen, job_id, payload, collect.records, len(blobs)), blobs
        # sent in pieces (the proxy hands them on one by one, never joined: Spooled)
        counts = tuple(-(-len(b) // PIECE) for b in blobs)
        return ("masked", gen, job_id, payload, collect.records, len(blobs), counts), blobs


def serve(conn) -> None:  # noqa: ANN001 - a multiprocessing.connection.Connection
    """Answer the proxy's messages until it closes the connection (or goes away). A thread
    of its own reads them, and gathers a streamed body's pieces at once: the proxy's
    sends never wait behind a body being masked (they have a time limit: offload.py)."""
    w = Worker()
    inbox: queue.SimpleQueue = queue.SimpleQueue()

    def read() -> None:
        while True:
            try:
                msg = conn.recv()
                raw = conn.recv_bytes() if msg[0] in ("mask", "chunk") else b""
            except (EOFError, OSError):
                inbox.put(None)
                return
            if msg[0] in ("chunk", "drop"):  # answered by nothing: gathered here, in order before its "end"
                try:
                    w.handle(msg, raw)
                except Exception:  # noqa: BLE001, S112 - a piece lost: its "end" finds the size wrong and refuses
                    continue
            else:
                inbox.put((msg, raw))
            del msg, raw

    threading.Thread(target=read, name="disguise-worker-read", daemon=True).start()
    while True:
        item = inbox.get()
        if item is None:
            return
        msg, raw = item
        del item
        paused = msg[0] in MASKS and gc.isenabled()
        if paused:  # (MASKS; a "build" that then masks the body waiting for it keeps it on)
            gc.disable()
        try:
            answer = w.handle(msg, raw)
        except Exception as e:  # noqa: BLE001 - a bug here: said by its type only (no traceback, no text)
            answer = ("error", msg[1], f"internal error ({type(e).__name__})"), []
        finally:
            if paused:
                gc.enable()
        del raw
        if answer is None:
            continue
        reply, blobs = answer
        del answer
        pieces = len(reply) > 6  # a streamed body's reply: each blob in pieces of PIECE bytes
        try:
            conn.send(reply)
            while blobs:  # each let go once sent: the worker holds no more than it must
                b = blobs.pop(0)
                if not pieces:
                    conn.send_bytes(b)
                    continue
                for i in range(0, len(b), PIECE):
                    conn.send_bytes(b, i, min(PIECE, len(b) - i))
                del b
        except OSError:
            return


def main(fd: int) -> None:
    """The worker process's entry (mitm/offload.py runs it: `python -P -c ...`)."""
    from multiprocessing.connection import Connection

    log.addHandler(logging.NullHandler())  # what masking logs goes to the proxy, nothing to stderr
    log.propagate = False
    gc.collect()
    gc.freeze()  # the imported package is never garbage: no full collection scans it (mitm/heap.py)
    try:
        os.nice(NICE)
    except OSError:
        pass  # not allowed here: the same priority as the proxy
    serve(Connection(fd))
