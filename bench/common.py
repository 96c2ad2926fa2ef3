"""What every bench module shares: paths, timing, process figures, a capped runner.

Importing this puts addon/ on sys.path, so `disguiselib` imports after it."""

from __future__ import annotations

import gc
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
# the addon imported (readcost.py --before runs another tree's in a process of its own)
ADDON = Path(os.environ["DISGUISE_BENCH_ADDON"]) if os.environ.get("DISGUISE_BENCH_ADDON") else REPO / "addon"
MAPPINGS = REPO / "mappings"
if str(ADDON) not in sys.path:
    sys.path.insert(0, str(ADDON))


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def cold(rules, fn: Callable[[], object]) -> Callable[[], object]:
    """fn as if the rule set met every text for the first time: what it remembers of
    texts met before (Rules.found, which spares a conversation's next turn the scans of
    its history) is forgotten before each call. Every masking figure is a first time
    unless it says "next turn"."""

    def run() -> object:
        found = getattr(rules, "found", None)  # an older tree has none
        if found is not None:
            found.clear()
        return fn()

    return run


def timeit(fn: Callable[[], object], reps: int, warm: int = 1) -> list[float]:
    """Wall times of reps calls of fn (after warm untimed calls), gc collected before each."""
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return ts


def fmt_rate(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e3:
        return f"{x / 1e3:.0f}k"
    return f"{x:.0f}"


def fmt_bytes(n: float) -> str:
    if n < 0:
        return "-" + fmt_bytes(-n)
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.0f} KiB"
    return f"{n:.0f} B"


def first_diff(got: str, want: str) -> str:
    i = next((j for j in range(min(len(got), len(want))) if got[j] != want[j]), min(len(got), len(want)))
    return f"first difference at {i} of {len(want)}: got {got[max(0, i - 20) : i + 40]!r} want {want[max(0, i - 20) : i + 40]!r}"


# -- processes (Linux /proc) ---------------------------------------------------------------


def proc_cpu(pid: int) -> float:
    """CPU time of a process, in seconds: the sum of its threads' run time from
    /proc/PID/task/*/schedstat (nanoseconds: a Chat stream's ~50 ms a request is read to
    the µs, where utime+stime counts 10 ms ticks), plus what its ended threads ran
    (utime+stime less its live threads', in ticks, never below 0); utime+stime alone
    where schedstat cannot be read."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        tick = os.sysconf("SC_CLK_TCK")
        ticks = int(f[11]) + int(f[12])
    except (OSError, IndexError, ValueError):
        return float("nan")
    run = 0
    live = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            run += int((task / "schedstat").read_text().split()[0])
            t = (task / "stat").read_text().rsplit(")", 1)[1].split()
            live += int(t[11]) + int(t[12])
    except (OSError, IndexError, ValueError):
        return ticks / tick
    return run / 1e9 + max(ticks - live, 0) / tick


def proc_status(pid: int, field: str) -> int:
    """A `kB` field of /proc/PID/status (VmRSS, VmHWM), in bytes; 0 if unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def rss_by_mapping(pid: int) -> dict[str, int]:
    """pid's resident bytes by what is mapped (/proc/PID/smaps): a file by its name (the
    addon's compiled modules together), `[heap]`, `[anon]` (Python's small-object arenas,
    large allocations, thread stacks), `[stack]`; {} if unreadable."""
    out: dict[str, int] = {}
    name = "[anon]"
    try:
        with open(f"/proc/{pid}/smaps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("Rss:"):
                    out[name] = out.get(name, 0) + int(line.split()[1]) * 1024
                elif line[:1] in "0123456789abcdef" and "-" in line.split(" ", 1)[0]:
                    parts = line.split()
                    path = parts[5] if len(parts) > 5 else "[anon]"
                    name = "disguise's compiled modules" if "/_compiled/" in path else path.rsplit("/", 1)[-1]
    except (OSError, ValueError):
        return {}
    return out


def proc_pss(pid: int) -> int:
    """Proportional set size of pid, in bytes (/proc/PID/smaps_rollup: each shared page
    divided among the processes that map it, so the proxy's and its worker's shared
    library pages count once in their sum); 0 if unreadable."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def children(pid: int) -> list[int]:
    """The child processes of pid (the masking worker is started by one of its threads)."""
    out = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            out += [int(x) for x in (task / "children").read_text().split()]
    except OSError:
        pass
    return out


def reset_peak_rss(pid: int) -> bool:
    """Reset VmHWM of pid (writing 5 to clear_refs); False where not permitted."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


# -- in-process cost, capped ---------------------------------------------------------------


def _child(fn: Callable[[], object], conn) -> None:  # runs in a forked process
    try:
        gc.collect()
        t0 = time.perf_counter()
        fn()
        conn.send(time.perf_counter() - t0)
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        conn.send(f"{type(e).__name__}: {e}"[:200])
    finally:
        conn.close()


def capped(fn: Callable[[], object], budget: float) -> float | None:
    """Wall time of one call of fn in a forked copy of this process, or None when it took
    longer than budget seconds (the copy is then killed). The copy inherits everything
    built so far, so only fn itself is timed. Raises RuntimeError if fn raised."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(fn, send), daemon=True)
    p.start()
    send.close()
    try:
        if not recv.poll(budget):
            return None
        got = recv.recv()
    except EOFError:
        got = "the measuring process died"
    finally:
        if p.is_alive():
            p.kill()
        p.join()
        recv.close()
    if isinstance(got, str):
        raise RuntimeError(got)
    return got


def profile(fn: Callable[[], object], title: str, top: int = 14) -> None:
    """Print a cProfile of one call of fn, sorted by own time."""
    import cProfile
    import io
    import pstats

    pr = cProfile.Profile()
    pr.enable()
    fn()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(top)
    lines = [ln for ln in s.getvalue().splitlines() if ln.strip()]
    print(f"    cProfile, {title} (sorted by own time):")
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
    for ln in lines[start : start + top + 1]:
        print("      " + ln.replace(str(ADDON) + "/", ""))
