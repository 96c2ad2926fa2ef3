"""A mitmproxy script for the load test (section (e)), loaded next to what is measured:
how late mitmproxy's event loop runs a 10 ms timer (the lag every callback waits,
accepting a new connection included), how many client connections reached
mitmproxy, and how many finished flows were still alive (mitmproxy's HTTP/1 layer holds
a connection's last flow, and with it what the addon keeps on it, until the connection
closes or sends again). Writes a JSON summary to $BENCH_LOOPLAG_FILE twice a second and
at exit.

Where the loop's time goes: a thread samples the loop thread's stack every millisecond
and files each sample under what its innermost frame of interest belongs to (the
addon's hooks, its Guard, inspection capture, the stream engine, masking, handing work
to a thread and back, mitmproxy itself, or waiting for I/O). The summary holds the
shares, and the longest loop stall: the single callback the loop ran that took the
most CPU time (every callback is timed; while one runs, nothing else does, accepting
included), with its wall time and what it was running.

    mitmdump ... -s addon/disguise.py -s bench/looplag.py
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
import weakref

TICK = 0.01
SAMPLE = 0.001

# (path fragment, category): the first that an innermost-first walk of the stack meets
_PLACES = (
    ("disguiselib/mitm/guard", "Guard"),
    ("disguiselib/inspect", "inspection capture"),
    ("disguiselib/base/masking", "masking"),
    ("disguiselib/leakguard", "leak check"),
    ("disguiselib/apis", "API streams"),
    ("disguiselib/base", "stream engine"),
    ("disguiselib/rules", "rule engine"),
    ("disguiselib/wire", "framers"),
    ("disguiselib", "addon hooks"),
    ("looplag", "this sampler"),
    ("concurrent/futures", "thread hand-offs"),
    ("asyncio/base_events.py:run_in_executor", "thread hand-offs"),
    ("selectors", "waiting for I/O"),
    ("mitmproxy", "mitmproxy itself"),
    ("asyncio", "asyncio"),
)


def _place(frame) -> str:
    while frame is not None:
        name = frame.f_code.co_filename
        for frag, cat in _PLACES:
            key = frag.split(":")[0]
            if key in name and (":" not in frag or frame.f_code.co_name == frag.split(":")[1]):
                return cat
        frame = frame.f_back
    return "other"


class Sampler:
    """Samples the loop thread's stack (see the module docstring)."""

    def __init__(self, ident: int) -> None:
        self.ident = ident
        self.counts: dict[str, int] = {}
        self.run = 0  # consecutive busy samples
        self.longest = 0
        self.t_run = 0.0
        self.longest_s = 0.0
        self.stop = False
        threading.Thread(target=self._loop, daemon=True, name="looplag-sampler").start()

    def _loop(self) -> None:
        while not self.stop:
            time.sleep(SAMPLE)
            frame = sys._current_frames().get(self.ident)
            cat = _place(frame)
            self.counts[cat] = self.counts.get(cat, 0) + 1
            now = time.monotonic()
            if cat == "waiting for I/O":
                self.run = 0
            else:
                if self.run == 0:
                    self.t_run = now
                self.run += 1
                if now - self.t_run > self.longest_s:
                    self.longest_s = now - self.t_run


def _time_callbacks(owner) -> None:
    """Time every callback the event loop runs (asyncio.Handle._run): the longest is
    the longest stall, and what it ran (the callback's repr) is kept with it."""
    run = asyncio.events.Handle._run
    owner.stall = owner.stall_cpu = 0.0
    owner.stall_what = ""
    clock = time.thread_time  # CPU time: a callback the machine's other load delays is not longer

    def timed(handle) -> None:
        t0 = clock()
        w0 = time.perf_counter()
        run(handle)
        dt = clock() - t0
        if dt > owner.stall_cpu:
            owner.stall_cpu = dt
            owner.stall = time.perf_counter() - w0
            owner.stall_what = repr(handle)[:160]

    asyncio.events.Handle._run = timed  # type: ignore[method-assign]


class LoopLag:
    def __init__(self) -> None:
        self.path = os.environ.get("BENCH_LOOPLAG_FILE", "")
        self.lags: list[float] = []
        self.connected = 0
        self.first_connect = 0.0
        self.last_connect = 0.0
        self._task: asyncio.Task | None = None
        self.sampler: Sampler | None = None
        self.finished: set[str] = set()  # ids of the flows that ended and are still alive
        self.finished_max = 0

    def running(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._watch())
        if self.sampler is None and os.environ.get("BENCH_LOOPPROF"):
            self.sampler = Sampler(threading.get_ident())
            _time_callbacks(self)

    def request(self, flow) -> None:
        if flow.request.headers.get("x-bench-looplag-reset"):  # the warm-up is over
            self.reset()

    def response(self, flow) -> None:
        self._ended(flow)

    def error(self, flow) -> None:
        self._ended(flow)

    def _ended(self, flow) -> None:
        if flow.id not in self.finished:
            self.finished.add(flow.id)
            weakref.finalize(flow, self.finished.discard, flow.id)
            self.finished_max = max(self.finished_max, len(self.finished))

    def client_connected(self, client) -> None:
        now = time.monotonic()
        self.connected += 1
        self.first_connect = self.first_connect or now
        self.last_connect = now

    async def _watch(self) -> None:
        last_write = time.monotonic()
        while True:
            t0 = time.monotonic()
            await asyncio.sleep(TICK)
            now = time.monotonic()
            self.lags.append(now - t0 - TICK)
            if now - last_write > 0.5:
                self._write()
                last_write = now

    def _write(self) -> None:
        if not self.path:
            return
        lags = sorted(self.lags) or [0.0]
        doc = {
            "ticks": len(self.lags), "lag_max": lags[-1], "lag_p50": lags[len(lags) // 2],
            "lag_p99": lags[int(len(lags) * 0.99)], "over_1s": sum(1 for x in self.lags if x > 1.0),
            "connected": self.connected, "accept_span": self.last_connect - self.first_connect,
            "finished_alive_max": self.finished_max, "finished_alive": len(self.finished),
        }  # fmt: skip
        if self.sampler is not None:
            doc["samples"] = dict(self.sampler.counts)
            doc["longest_busy"] = self.sampler.longest_s
            doc["stall"] = getattr(self, "stall", 0.0)
            doc["stall_cpu"] = getattr(self, "stall_cpu", 0.0)
            doc["stall_what"] = getattr(self, "stall_what", "")
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, self.path)

    def reset(self) -> None:
        if self.sampler is not None:
            self.sampler.counts.clear()
            self.sampler.longest_s = 0.0
            self.stall = self.stall_cpu = 0.0
        self.lags.clear()
        self.connected = 0
        self.first_connect = self.last_connect = 0.0
        self.finished_max = len(self.finished)

    def done(self) -> None:
        self._write()


addons = [LoopLag()]
