"""Mapping files changed while the proxy runs: when a new rule set takes over (contract
§2, "Reloading").

A team edits a shared mapping file while requests run. `cat new.yaml > local.yaml` and
most editors truncate the file, then write it: a request in between read an empty file,
or a file cut after its first rules, and went out with the others' originals in clear.
So a reload never takes away a rule the user did not clearly ask to remove:

- The files are looked at (their listing, size, modification time and inode: a few
  `stat` calls) when a protected request arrives. A change is built into a new rule set
  in a worker thread, never on the event loop: running flows go on meanwhile, each with
  the set it started with (a flow reads exactly one set, from its headers to its end).
  The request that saw the change waits for that build (a rule just added is in force
  for it): when a build of older files was under way (a teammate saved twice, a build
  takes seconds) or the files changed while it read them, for one more of the files as
  they are now; requests that do not need a set do not wait.
- A new set that keeps every rule in force (every literal's original, every pattern
  and strip rule as it was) takes over at once: it only adds or changes disguises.
- A set that loses a rule — an empty file, a half-written one, a rule deleted — is
  *held*: the previous set stays in force and the log says how many rules it would
  drop and where they were (never an original). It takes over once the files have
  *settled*: the same content (SHA-256 of every file) read again `SETTLE_S` or more
  after it was first read. A half-written file never stays the same that long; a
  deliberate deletion costs its author two seconds.
- Files that do not load keep the previous set in force (logged once per content) and
  are tried again when they change.
- Files that change while they are being read are read again at the next request.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..config import Config, build_config
from ..errors import MappingError, ScopeError
from ..rules import mappings

log = logging.getLogger("disguise")

# How long a set that drops rules must stay unchanged on disk before it takes over: an
# editor or `cat` writes a mapping file in milliseconds (100,000 literals: 5 MB), so a
# file read twice this far apart, the same both times, is what its author meant.
SETTLE_S = 2.0


@dataclass(frozen=True)
class Built:
    """One read of the files: their content digest and the set built from it (or why not)."""

    snapshot: tuple
    digest: str | None  # None: the files changed while being read
    config: Config | None
    error: str | None


def lost(old: Config, new: Config) -> list[str]:
    """Where the rules of `old` that `new` no longer has were (`file:line: literal #n`,
    a pattern's or strip rule's source): never an original."""
    a, b = old.rules.mappings, new.rules.mappings
    originals = {lit.original for lit in b.literals}
    out = [lit.source for lit in a.literals if lit.original not in originals]
    kept_p = {(p.name, p.regex, p.group, p.validator, p.keywords, p.window) for p in b.patterns}
    out += [p.source for p in a.patterns if (p.name, p.regex, p.group, p.validator, p.keywords, p.window) not in kept_p]
    kept_s = {s.regex for s in b.strips}
    out += [s.source for s in a.strips if s.regex not in kept_s]
    return out


# How many builds more a request that saw a change waits for when the one it waited for
# was not of the files it saw (Reloader._wait): then it goes on with the set in force.
CHASE = 3


# The GIL's switch interval while a set is built in a worker thread. The build is Python
# (YAML, checks, tries) and holds the GIL but when the interpreter hands it over: the
# event loop, wanting it back after every socket read or write, waited up to the default
# 5 ms each time, and a running stream's events came 12 ms apart at the median instead of
# 1 (an 8,000-literal build; bench/reload.py). Handed over every 0.2 ms instead, for the
# second or so a build takes.
BUILD_SWITCH_S = 0.0002


def build(cfg: Config) -> Built:
    """Read and build the files of `cfg` again (in a worker thread: it may take seconds;
    build_config holds the cyclic collector off meanwhile, which also keeps the loop
    moving)."""
    snap = mappings.snapshot(cfg.paths, cfg.defaults)
    before = mappings.digest(cfg.paths, cfg.defaults)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, BUILD_SWITCH_S))
    try:
        new: Config | None = build_config(cfg.paths, cfg.defaults, [str(h) for h in cfg.hosts], cfg.fakes_key)
        error = None
    except (MappingError, ScopeError) as e:
        new, error = None, str(e)
    finally:
        sys.setswitchinterval(interval)
    after = mappings.digest(cfg.paths, cfg.defaults)
    return Built(snap, before if before == after else None, new, error)


@dataclass
class _Held:
    digest: str
    config: Config
    since: float  # time.monotonic() of the first read of this content


class Reloader:
    """The reload rule above, for one Disguise. `install(config, verb)` makes a set the
    one in force; `current()` reads it; `failed()` is told of files that do not load
    (once per content: the metrics count it)."""

    def __init__(
        self,
        current: Callable[[], Config | None],
        install: Callable[[Config, str], None],
        failed: Callable[[], None] = lambda: None,
    ) -> None:
        self._current = current
        self._install = install
        self._on_failed = failed
        self._seen: tuple | None = None  # the snapshot last decided on
        self._failed: str | None = None  # digest of content that did not load (logged)
        self._held: _Held | None = None
        self._task: asyncio.Task | None = None
        self._timer: asyncio.TimerHandle | None = None
        self.clock: Callable[[], float] = time.monotonic

    def installed(self, cfg: Config) -> None:
        """A set took over (at load, an option change, or here): its files are decided."""
        self._seen = cfg.snapshot
        self._held = None
        self._failed = None

    def check(self) -> Awaitable[None] | None:
        """Look at the files: None when the set in force is the one to use; else an
        awaitable that builds the change off the loop and decides (without a running
        event loop — tests, the CLI — it is done here and None returned)."""
        return self._check(CHASE)

    def _check(self, chase: int) -> Awaitable[None] | None:
        cfg = self._current()
        if cfg is None:
            return None
        try:
            asyncio.get_running_loop()
            looping = True
        except RuntimeError:
            looping = False
        if not looping and self._settle_due():  # with a loop, a timer does it (_due)
            self._try_settle(cfg, None)
            cfg = self._current() or cfg
        snap = mappings.snapshot(cfg.paths, cfg.defaults)
        if snap == cfg.snapshot:
            self._held = None  # back to what is in force
            return None
        if snap == self._seen:
            return None
        if not looping:
            self._decide(cfg, build(cfg))
            return None
        return self._wait(chase)

    async def _wait(self, chase: int) -> None:
        """The build of the files this request saw, then the files looked at again.
        The build may be of older files (one under way when they changed again: another
        teammate's save), or find them changing while it reads them: a request once went
        on with the set in force then, and the rule just added, the change it saw, was not
        in force for it, its original left unmasked (probe Q). So after each build it looks
        again, CHASE times at most (files saved again and again while they are built);
        then it goes on with the set in force, as before."""
        if self._task is None or self._task.done():
            cfg = self._current()
            if cfg is not None:
                self._task = asyncio.ensure_future(self._round(cfg))
        if self._task is not None:
            await asyncio.shield(self._task)
        if chase > 0:
            again = self._check(chase - 1)
            if again is not None:
                await again

    async def _round(self, cfg: Config) -> None:
        try:
            built = await asyncio.to_thread(build, cfg)
        except Exception as e:  # noqa: BLE001 - the previous set stays; never a request's failure
            log.error("disguise: mapping files changed but could not be read (%s): the previous rule set "
                      "stays in force", type(e).__name__)  # fmt: skip
            return
        if self._current() is cfg:  # an option change installed another set meanwhile: this one is stale
            self._decide(cfg, built)

    def _decide(self, cfg: Config, b: Built) -> None:
        if b.digest is None:
            log.info("disguise: mapping files changed while being read: read again at the next request")
            return
        self._seen = b.snapshot
        if b.config is None:
            self._held = None
            if b.digest != self._failed:
                self._failed = b.digest
                self._on_failed()
                log.error("disguise: mapping files changed but do not load; the previous rule set stays in "
                          "force: %s", b.error)  # fmt: skip
            return
        gone = lost(cfg, b.config)
        if not gone:
            self._install(b.config, "reloaded")
            return
        if self._held is not None and self._held.digest == b.digest:
            if self._settle_due():
                self._take_held(gone)
            return
        self._held = _Held(b.digest, b.config, self.clock())
        log.warning(
            "disguise: mapping files changed and would drop %d rule(s) (%s%s): held until the files stay "
            "unchanged for %g s (a file being written); the previous rule set stays in force",
            len(gone), ", ".join(gone[:3]), f" +{len(gone) - 3} more" if len(gone) > 3 else "", SETTLE_S,
        )  # fmt: skip
        self._schedule()

    def _settle_due(self) -> bool:
        return self._held is not None and self.clock() - self._held.since >= SETTLE_S

    def _take_held(self, gone: list[str]) -> None:
        held = self._held
        assert held is not None
        log.warning("disguise: mapping files settled: %d rule(s) removed as the files say", len(gone))
        self._install(held.config, "reloaded")

    def _try_settle(self, cfg: Config, digest: str | None) -> None:
        """The held set takes over if the files still hold what it was built from."""
        held = self._held
        if held is None:
            return
        if digest is None:
            digest = mappings.digest(cfg.paths, cfg.defaults)
        if digest == held.digest and mappings.snapshot(cfg.paths, cfg.defaults) == self._seen:
            self._take_held(lost(cfg, held.config))

    def _schedule(self) -> None:
        """With an event loop, the held set is looked at again when it is due, whether
        or not a request comes."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_later(SETTLE_S, self._due)

    def _due(self) -> None:
        self._timer = None
        cfg, held = self._current(), self._held
        if cfg is None or held is None:
            return

        async def settle() -> None:
            digest = await asyncio.to_thread(mappings.digest, cfg.paths, cfg.defaults)
            if self._current() is cfg and self._held is held:
                self._try_settle(cfg, digest)

        task = asyncio.ensure_future(settle())
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)
