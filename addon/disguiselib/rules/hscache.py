"""Hyperscan's compiled databases kept on disk (linear._hyperscan): compiling the
shipped patterns takes seconds, loading one milliseconds."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

try:
    import hyperscan  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover - a platform without its wheel: nothing is stored
    hyperscan = None  # type: ignore[assignment]


def cache_dir() -> Path:
    """Where compiled prefilter databases are kept: $DISGUISE_CACHE, else
    $XDG_CACHE_HOME/disguise, else ~/.cache/disguise."""
    if os.environ.get("DISGUISE_CACHE"):
        return Path(os.environ["DISGUISE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "disguise"


# The prefilter databases kept on disk at most (cache_dir): the ones used last. Each
# change of a rule set's patterns names a new entry (kilobytes; 1.5 MiB for the shipped
# set), and nothing else ever removed the old ones: a user who edits a mapping file
# daily, or a test suite, grew the directory without end (91 MiB seen on a developer's
# machine).
CACHE_KEEP = 128
# ... and their bytes at most: the newest is kept whatever its size.
CACHE_BYTES = 64 << 20


def load(key: str):
    path = cache_dir() / f"prefilter-{key}.hsdb"
    try:
        raw = path.read_bytes()
        n = int.from_bytes(raw[:4], "big")
        always = tuple(int(x) for x in raw[4 : 4 + n].decode("ascii").split(",") if x)
        db = hyperscan.loadb(raw[4 + n :], hyperscan.HS_MODE_BLOCK), always
    except Exception:  # noqa: BLE001 - no entry, or a broken one: compile
        return None
    try:
        os.utime(path)  # used now: the last one prune removes
    except OSError:
        pass  # a read-only cache: it is read all the same
    return db


def store(key: str, db, always: tuple[int, ...]) -> None:
    d = cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        head = ",".join(map(str, always)).encode("ascii")
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".prefilter-")
        with os.fdopen(fd, "wb") as f:
            f.write(len(head).to_bytes(4, "big") + head + hyperscan.dumpb(db))
        os.replace(tmp, d / f"prefilter-{key}.hsdb")
        prune(d)
    except OSError:
        pass  # a read-only home: compiled again next time, nothing else changes


# A temporary file of store this many seconds old was left by a process that
# died writing it (a write takes well under a second): prune removes it.
STALE_TMP_S = 3600


def prune(d: Path) -> None:
    """The entries of d past the CACHE_KEEP used last, or past CACHE_BYTES,
    removed, the oldest first (the newest is kept), and the temporary files of writes
    that never finished. Safe beside another process using the cache: an entry removed
    under it is compiled again there, never loaded wrong (an entry is replaced whole,
    os.replace)."""
    for t in d.glob(".prefilter-*"):
        try:
            if time.time() - t.stat().st_mtime > STALE_TMP_S:
                t.unlink()
        except OSError:
            continue  # renamed or removed meanwhile
    aged = []
    for e in d.glob("prefilter-*.hsdb"):
        try:
            st = e.stat()
        except OSError:
            continue  # removed meanwhile
        aged.append((st.st_mtime_ns, e.name, st.st_size, e))
    aged.sort(reverse=True)
    held = 0
    for k, (_, _, size, e) in enumerate(aged):
        held += size
        if k == 0 or (k < CACHE_KEEP and held <= CACHE_BYTES):
            continue  # (the newest always: it was just stored)
        try:
            e.unlink()
        except OSError:
            pass
