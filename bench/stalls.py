"""A mitmproxy script that traces where the event loop's long pauses come from (issue 29:
"no other stream paused while big bodies are masked"), loaded next to what is measured:

    mitmdump ... -s addon/disguise.py -s bench/stalls.py     (BENCH_STALLS_FILE=out.json)

A task on the loop wakes every 2 ms; a wake-up later than BENCH_STALLS_MS (default 12 ms)
is a pause (every callback waited as long). For each it keeps, over the pause's window:
- the loop thread's CPU time, its wait on the run queue (the machine's other load had the
  CPU: /proc/self/task/TID/schedstat) and the rest (asleep: waiting for the GIL, or in
  a blocking call);
- the CPU time each other thread of the process got (one that ran while the loop did not
  held the GIL), and the child processes' (the masking worker) in the window;
- the garbage collector's time on the loop thread (gc.callbacks);
- what the loop thread was running: its stack, sampled every 2 ms by a thread of this
  script (the innermost frames).

And every callback the loop runs is timed in CPU time (asyncio.Handle._run; the
thread's own CPU, so the machine's load does not lengthen it): a histogram of the
loop's turns and the longest ones with what they ran. A pause the run queue made is the
machine's; a long turn is the code's (mitmproxy's or the addon's: its stack says which).

At done it writes a JSON summary: the longest pauses with those
figures, a histogram of the wake-ups' lateness, and per cause the pauses it dominated.
bench/offload.py --trace loads it and prints it.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import threading
import time
from collections import Counter, deque

THRESHOLD = float(os.environ.get("BENCH_STALLS_MS", "12")) / 1e3
TICK = 0.002
KEEP = 60  # the longest pauses kept with their samples


def _cpu(ident: int) -> float:
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(ident))
    except (OSError, AttributeError, OverflowError):
        return 0.0


def _sched(tid: int) -> tuple[float, float]:
    """(CPU, run-queue wait) of a thread, seconds."""
    try:
        with open(f"/proc/self/task/{tid}/schedstat", "rb") as f:
            a, b, _ = f.read().split()
        return int(a) / 1e9, int(b) / 1e9
    except (OSError, ValueError):
        return 0.0, 0.0


def _children_cpu() -> float:
    """CPU time of the process's children (the masking worker: started by a thread)."""
    tot = 0.0
    try:
        kids = []
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as f:
                kids += f.read().split()
        for k in kids:
            with open(f"/proc/{k}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            tot += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        pass
    return tot


def _where(frame, depth: int = 7) -> str:
    """The innermost frames of frame's stack, file:function:line, innermost first."""
    out = []
    while frame is not None and len(out) < depth:
        code = frame.f_code
        short = code.co_filename.split("site-packages/")[-1].split("/addon/")[-1].split("/lib/python3")[-1]
        out.append(f"{short}:{code.co_name}:{frame.f_lineno}")
        frame = frame.f_back
    return " < ".join(out)


def _what(handle) -> str:  # noqa: ANN001
    """What a loop callback ran: its function, or a task's coroutine and where it now
    waits (never repr(handle): that formats its arguments, a 200 MB body among them)."""
    cb = getattr(handle, "_callback", None)
    task = getattr(cb, "__self__", None)
    if isinstance(task, asyncio.Task):
        coro = task.get_coro()
        frame = getattr(coro, "cr_frame", None)
        at = f" at {_where(frame, 3)}" if frame is not None else ""
        return f"task {getattr(coro, '__qualname__', type(coro).__name__)}{at}"[:300]
    return getattr(cb, "__qualname__", type(cb).__name__)


class Stalls:
    def __init__(self) -> None:
        self.path = os.environ.get("BENCH_STALLS_FILE", "")
        self.loop_ident = 0
        self.samples: deque[tuple[float, str]] = deque(maxlen=4000)
        self.gcs: deque[tuple[float, float]] = deque(maxlen=1000)
        self.gc_t0 = 0.0
        self.pauses: list[dict] = []
        self.hist: Counter[int] = Counter()  # lateness, 5 ms buckets
        self.causes: Counter[str] = Counter()
        self.stop = False
        self.last_write = 0.0
        self._task: asyncio.Task | None = None
        self.turns: Counter[int] = Counter()  # callbacks by CPU time, 1 ms buckets (capped at 200)
        self.long_turns: list[dict] = []  # the longest callbacks (CPU), with what they ran

    def running(self) -> None:
        if self._task is None:
            self.loop_ident = threading.get_ident()
            gc.callbacks.append(self._gc)
            threading.Thread(target=self._sample, daemon=True, name="stalls-sampler").start()
            self._task = asyncio.get_running_loop().create_task(self._tick())
            self._time_turns()

    def _time_turns(self) -> None:
        """Time every callback of the loop (asyncio.Handle._run) in the thread's CPU time."""
        run = asyncio.events.Handle._run
        clock, me = time.thread_time, self

        def timed(handle) -> None:  # noqa: ANN001
            t0, w0 = clock(), time.perf_counter()
            run(handle)
            dt = clock() - t0
            me.turns[min(int(dt * 1e3), 200)] += 1
            if dt > 0.004:
                me._long_turn(dt, w0, time.perf_counter(), handle)

        asyncio.events.Handle._run = timed  # type: ignore[method-assign]

    def _long_turn(self, cpu: float, w0: float, w1: float, handle) -> None:  # noqa: ANN001
        gcs = sum(max(0.0, min(b, w1) - max(a, w0)) for a, b in list(self.gcs))
        stacks = Counter(s for t, s in list(self.samples) if w0 <= t <= w1).most_common(2)
        self.long_turns.append({"cpu_ms": round(cpu * 1e3, 1), "wall_ms": round((w1 - w0) * 1e3, 1),
                                "gc_ms": round(gcs * 1e3, 1), "what": _what(handle),
                                "stacks": [[n, s] for s, n in stacks]})  # fmt: skip
        if len(self.long_turns) > 2 * KEEP:
            self.long_turns.sort(key=lambda x: -x["cpu_ms"])
            del self.long_turns[KEEP:]

    def _threads(self) -> dict[str, float]:
        return {f"{t.name}": _cpu(t.ident) for t in threading.enumerate()
                if t.ident and t.ident != self.loop_ident and t.name != "stalls-sampler"}  # fmt: skip

    async def _tick(self) -> None:
        tid = threading.get_native_id()
        last = time.perf_counter()
        sched, threads, kids = _sched(tid), self._threads(), _children_cpu()
        while not self.stop:
            await asyncio.sleep(TICK)
            now = time.perf_counter()
            sched2, threads2, kids2 = _sched(tid), self._threads(), _children_cpu()
            late = now - last - TICK
            self.hist[min(int(late * 200), 40)] += 1
            if late > THRESHOLD:
                self._pause(last, now, sched, sched2, threads, threads2, kids2 - kids)
            last, sched, threads, kids = now, sched2, threads2, kids2

    def _pause(self, t0, t1, s0, s1, th0, th1, kids) -> None:  # noqa: ANN001
        wall = t1 - t0
        cpu, queue = s1[0] - s0[0], s1[1] - s0[1]
        others = {k: round((v - th0.get(k, v)) * 1e3, 1) for k, v in th1.items() if v - th0.get(k, v) > 0.0005}
        gcs = sum(max(0.0, min(b, t1) - max(a, t0)) for a, b in list(self.gcs))
        stacks = Counter(s for t, s in list(self.samples) if t0 <= t <= t1).most_common(3)  # a copy: the sampler appends
        p = {
            "wall_ms": round(wall * 1e3, 1), "loop_cpu_ms": round(cpu * 1e3, 1),
            "loop_runqueue_ms": round(queue * 1e3, 1), "loop_asleep_ms": round((wall - cpu - queue) * 1e3, 1),
            "gc_ms": round(gcs * 1e3, 1), "threads_cpu_ms": others, "children_cpu_ms": round(kids * 1e3, 1),
            "stacks": [[n, s] for s, n in stacks],
        }  # fmt: skip
        parts = {"loop ran (callbacks)": cpu - gcs, "gc on the loop": gcs, "run queue (machine load)": queue,
                 "asleep (GIL or a blocking call)": wall - cpu - queue}  # fmt: skip
        self.causes[max(parts, key=lambda k: parts[k])] += 1
        self.pauses.append(p)
        if len(self.pauses) > 2 * KEEP:
            self.pauses.sort(key=lambda x: -x["wall_ms"])
            del self.pauses[KEEP:]

    def _gc(self, phase: str, info: dict) -> None:
        if threading.get_ident() != self.loop_ident:
            return
        if phase == "start":
            self.gc_t0 = time.perf_counter()
        elif self.gc_t0:
            self.gcs.append((self.gc_t0, time.perf_counter()))
            self.gc_t0 = 0.0

    def _sample(self) -> None:
        while not self.stop:
            time.sleep(TICK)
            frame = sys._current_frames().get(self.loop_ident)
            if frame is not None:
                self.samples.append((time.perf_counter(), _where(frame)))

    # -- output ----------------------------------------------------------------------------

    def request(self, flow) -> None:
        if flow.request.headers.get("x-bench-stalls-reset"):
            self.pauses.clear()
            self.hist.clear()
            self.causes.clear()
            self.turns.clear()
            self.long_turns.clear()
        if flow.request.headers.get("x-bench-stalls-write"):  # the run is over (done may come too late)
            self._write()

    def _write(self) -> None:
        if not self.path:
            return
        self.pauses.sort(key=lambda x: -x["wall_ms"])
        del self.pauses[KEEP:]
        self.long_turns.sort(key=lambda x: -x["cpu_ms"])
        del self.long_turns[KEEP:]
        doc = {"turns_cpu_1ms": {str(k): v for k, v in sorted(self.turns.items())}, "long_turns": self.long_turns,
               "threshold_ms": THRESHOLD * 1e3, "pauses": self.pauses, "causes": dict(self.causes),
               "late_5ms": {str(k * 5): v for k, v in sorted(self.hist.items())}}  # fmt: skip
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, self.path)

    def done(self) -> None:
        self.stop = True
        self._write()


addons = [Stalls()]
