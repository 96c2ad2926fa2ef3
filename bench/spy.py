"""Where a process's main thread spends its CPU, sampled by py-spy (issue 29: the next
turn's cost through mitmdump, `handoff.py --chain N --spy`).

Thread-CPU wrappers round hooks (hookcost.py) miss what an async hook does after its first
`await` and what mitmproxy does around the hooks; a sampler sees all of it. py-spy
(`pip install py-spy`, not a dependency of the project) samples the process from outside
at RATE a second, the main thread's stacks only where it runs (idle samples are left out),
so a sample is 1/RATE s of the main thread's CPU. Where py-spy is not installed or cannot
attach (ptrace not allowed), `Sampler` says so and reports nothing.

    with Sampler(pid) as s: ...   # then s.stacks: [(frames, count)], frames outermost first
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RATE = 1000
_FRAME = re.compile(r"^(?P<name>.*?) \((?:.*/)?(?P<file>[^/]*?):(?P<line>\d+)\)$")


def py_spy() -> str | None:
    """The py-spy beside this interpreter, else on PATH, else None."""
    here = Path(sys.executable).with_name("py-spy")
    return str(here) if here.exists() else shutil.which("py-spy")


class Sampler:
    """py-spy recording pid's threads from entering to leaving (raw, collapsed stacks)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.stacks, self.why = pid, [], ""
        self._proc: subprocess.Popen | None = None
        self._out = Path(tempfile.mkdtemp(prefix="disguise-spy.")) / "stacks.txt"

    def __enter__(self) -> Sampler:
        exe = py_spy()
        if exe is None:
            self.why = "py-spy is not installed (pip install py-spy)"
            return self
        self._proc = subprocess.Popen(
            [exe, "record", "-p", str(self.pid), "-o", str(self._out), "-f", "raw", "-r", str(RATE), "--threads",
             "--nonblocking"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        time.sleep(1.5)  # (it attaches, then samples)
        if self._proc.poll() is not None:
            self.why = f"py-spy stopped: {self._proc.stderr.read().decode(errors='replace')[-200:]}"  # type: ignore[union-attr]
            self._proc = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is None:
            return
        self._proc.send_signal(signal.SIGINT)
        try:
            self._proc.wait(60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
        if not self._out.exists():
            self.why = "py-spy wrote nothing"
            return
        for line in self._out.read_text().splitlines():
            stack, _, n = line.rpartition(" ")
            frames = stack.split(";")
            if frames and frames[0].startswith("thread") and "MainThread" in frames[0] and len(frames) > 1:
                self.stacks.append(([_short(f) for f in frames[1:]], int(n)))
        if keep := os.environ.get("DISGUISE_SPY_KEEP"):  # the raw stacks kept, for a closer look
            shutil.copy(self._out, Path(keep) / f"stacks-{self.pid}-{time.monotonic_ns()}.txt")
        shutil.rmtree(self._out.parent, ignore_errors=True)

    @property
    def total(self) -> int:
        return sum(n for _, n in self.stacks)

    def under(self, name: str, depth: int = 1) -> collections.Counter:
        """Samples below the outermost frame called name, by the `depth` frames under it
        ("(own)" where the sample was in that frame itself)."""
        got: collections.Counter = collections.Counter()
        for frames, n in self.stacks:
            at = next((i for i, f in enumerate(frames) if f.split(" @")[0] == name), None)
            if at is not None:
                got[" > ".join(f.split(" @")[0] for f in frames[at + 1 : at + 1 + depth]) or "(own)"] += n
        return got


def _short(frame: str) -> str:
    """`name (path/file.py:12)` as `name @file.py`."""
    m = _FRAME.match(frame)
    return f"{m['name']} @{m['file']}" if m else frame
