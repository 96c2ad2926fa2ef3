"""A mitmproxy script for the load test (section (e)), loaded next to what is measured:
how late mitmproxy's event loop runs a 10 ms timer (the lag every callback waits,
accepting a new connection included), and how many client connections reached
mitmproxy. Writes a JSON summary to $BENCH_LOOPLAG_FILE twice a second and at exit.

    mitmdump ... -s addon/disguise.py -s bench/looplag.py
"""

from __future__ import annotations

import asyncio
import json
import os
import time

TICK = 0.01


class LoopLag:
    def __init__(self) -> None:
        self.path = os.environ.get("BENCH_LOOPLAG_FILE", "")
        self.lags: list[float] = []
        self.connected = 0
        self.first_connect = 0.0
        self.last_connect = 0.0
        self._task: asyncio.Task | None = None

    def running(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._watch())

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
        }  # fmt: skip
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, self.path)

    def reset(self) -> None:
        self.lags.clear()
        self.connected = 0
        self.first_connect = self.last_connect = 0.0

    def done(self) -> None:
        self._write()


addons = [LoopLag()]
