"""One valid configuration: the compiled rules, the scope and what they came from (sans
I/O). Built from the options by the adapter, rebuilt when the mapping files change."""

from __future__ import annotations

import gc
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import engine, shipped
from .apis import registry
from .base import readpass
from .errors import MappingError, reason
from .rules import linear, mappings
from .rules.rules import Rules
from .scope import HostRule, near_misses, parse_hosts
from .wire import decoding

log = logging.getLogger("disguise")

# What `disguise_mappings` names when it is not set: the repository's mappings/ folder
# in a checkout, nothing for an installed package (shipped.py). The shipped defaults
# come on top of either, unless turned off.
DEFAULT_MAPPINGS: tuple[str, ...] = shipped.USER_MAPPINGS
# How many file and host names the one-line summary lists before it says "+N more".
_NAMES_SHOWN = 2
# Per side of a flow kept for inspection and replay: an LLM request with a long context
# runs to a few MB; a long streamed answer rarely passes 1 MB. Above this a side is cut
# and marked, never silently shortened.
CAPTURE_LIMIT = 8 * 1024 * 1024
# From this size a request body is masked in the worker process (mitm/offload.py): below
# it, masking costs less than the hand-off (about 1 ms each way for 256 KiB, masking it 5 ms).
OFFLOAD_BYTES = 256 * 1024
# A request body declared this large is fed to the masking worker as it arrives (mitm/streamed.py).
STREAM_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Option:
    """One of the addon's mitmproxy options (declared by mitm/options.py and, for the
    capture limit, by the Inspector)."""

    name: str
    type: object
    default: object
    help: str
    # A size or a count: the least value it takes (None: not a number). A negative size
    # would read as "no bound" to one consumer and as the default to another; refused.
    least: int | None = None


# Every option the addon has, in one table.
OPTIONS: tuple[Option, ...] = (
    Option(
        "disguise_mappings", Sequence[str], list(DEFAULT_MAPPINGS),
        "Mapping files or folders (YAML), loaded after the shipped defaults, in order; "
        "a folder's *.yaml/*.yml files in file-name order. Repeat the option for more. "
        "Default: the repository's mappings/ folder in a checkout; installed, a mappings/ folder in the "
        "working directory holding YAML files (named at startup), else none.",
    ),
    Option(
        "disguise_defaults", bool, True,
        "Load the shipped default mappings (the repository's mappings/default.yaml) under your own.",
    ),
    Option(
        "disguise_hosts", Sequence[str], [],
        "Only mask requests to these hosts (host or host:port, comma-separated or repeated; "
        "empty: every host).",
    ),
    Option(
        "disguise_fail_open", bool, False,
        "Forward a request that cannot be masked unchanged instead of refusing it.",
    ),
    Option(
        "disguise_allow_unknown", bool, False,
        "Forward requests to endpoints disguise does not transform even when they contain an "
        "original (with a warning) instead of refusing them.",
    ),
    Option(
        "disguise_replay_current_rules", bool, False,
        "Replay (client replay, -nr) a recorded flow even when rules that masked it when it was "
        "recorded are no longer in force; by default such a flow is refused.",
    ),
    Option(
        "disguise_aws_resign", bool, False,
        "Mask AWS Bedrock requests signed with SigV4 and sign them again with mitmdump's own AWS "
        "credentials (botocore's chain: environment, profile, SSO, roles); off: they are refused.",
    ),
    Option(
        "disguise_decoded_limit", int, decoding.LIMIT,
        "Bytes a compressed body (Content-Encoding gzip, deflate, br, zstd) may expand to; past it "
        "the request is refused, the response replaced by an error (a stream ends with one).",
        least=0,
    ),
    Option(
        "disguise_offload_bytes", int, OFFLOAD_BYTES,
        "Request bodies of this many bytes or more (decoded) are masked and checked in a worker "
        "process, so that other flows' streams never wait for them (started in the background "
        "when the proxy runs). 0: never (masked in a thread of the proxy's process).",
        least=0,
    ),
    Option(
        "disguise_stream_bytes", int, STREAM_BYTES,
        "A request body declared this large (Content-Length) or of unknown length (chunked), to "
        "an API disguise masks, is handed to the masking worker as it arrives instead of being "
        "held whole by mitmproxy; upstream gets the request once it is completely masked. "
        "0: never. Needs disguise_offload_bytes above 0.",
        least=0,
    ),
    Option(
        "disguise_offload_warm", bool, True,
        "Start the masking worker (disguise_offload_bytes) in the background as soon as the proxy "
        "runs, so that the first large body does not wait for its start and rule build (0.5-5 s). "
        "Off: the first body that needs it starts it (that body, and any before the worker is ready, is "
        "masked in a thread of the proxy meanwhile); a proxy that never sees one runs no worker.",
    ),
    Option(
        "disguise_fakes", bool, False,
        "Replace what a pattern rule finds with a keyed, deterministic fake of the same kind (an "
        "e-mail address at a reserved domain, a Luhn-valid card number, a token with the same "
        "prefix, length and alphabet, ...) instead of a numbered placeholder ([EMAIL_1]); restored "
        "in responses the same way. A rule's `fake:` chooses its generator or turns it off.",
    ),
    Option(
        "disguise_fakes_key", str, "",
        "The key file fakes are made with (disguise_fakes): the same key gives the same fake of "
        "an original in every request, after a restart and on every instance sharing it. "
        "Default: disguise-fakes.key in mitmproxy's confdir, created once with mode 0600.",
    ),
    Option(
        "disguise_capture_limit", int, CAPTURE_LIMIT,
        "Bytes kept of each side of an LLM flow for inspection and replay: the request as "
        "the client sent it, the response as upstream sent it, a streamed response as the "
        "client received it. A side cut at the limit is marked. 0 keeps none.",
        least=0,
    ),
    Option(
        "disguise_metrics", str, "",
        "Serve Prometheus metrics at http://HOST:PORT/metrics (e.g. 127.0.0.1:9464; port 0: any free "
        "port, logged). Counts and timings only: no label holds request text. Empty: off.",
    ),
)  # fmt: skip
OPTION_NAMES = frozenset(o.name for o in OPTIONS)
_LEAST = {o.name: o.least for o in OPTIONS if o.least is not None}


def refused_value(name: str, value: object) -> str | None:
    """Why a value of one of the addon's options is refused (None: it is not). The one
    check of every size and count option, whichever addon declares it: a value below
    the option's least (OPTIONS), named with the option."""
    least = _LEAST.get(name)
    if least is not None and isinstance(value, int) and value < least:
        return f"{name}: must be {least} or more, not {value}"
    return None


@dataclass(frozen=True)
class Config:
    """One valid configuration: compiled rules, the scope and what they came from."""

    rules: Rules
    hosts: tuple[HostRule, ...]
    paths: tuple[str, ...]
    defaults: bool
    snapshot: tuple
    # The literals turned around (disguise -> original): finds a disguise the client
    # itself typed (its restoration cannot be told apart from ours).
    disguises: Rules | None
    # disguise_fakes: the key fakes are made with (None: placeholders)
    fakes_key: bytes | None = None

    def describe(self) -> str:
        """One short line: which files, how many rules of each kind, which hosts."""
        ms = self.rules.mappings
        user = [f for f in ms.files if Path(f) != mappings.DEFAULTS_FILE]
        files = "defaults" if self.defaults else "no defaults"
        if user:
            files += f" + {len(user)} file{'s' if len(user) != 1 else ''} ({_names([Path(f).name for f in user])})"
        scope = _names([str(h) for h in self.hosts]) if self.hosts else "every host"
        return (
            f"{files}: {_n(len(ms.literals), 'literal')}, {_n(len(ms.patterns), 'pattern')}, "
            f"{_n(len(ms.strips), 'strip rule')}; scope: {scope}" + ("; fakes" if self.fakes_key is not None else "")
        )

    def details(self) -> str:
        """What describe() leaves out: every file by its path, every host, the APIs
        transformed, and what happens to other requests."""
        ms = self.rules.mappings
        hosts = ", ".join(map(str, self.hosts)) if self.hosts else "every host"
        return (
            f"files: {', '.join(ms.files)}; hosts: {hosts}; APIs: {', '.join(registry.APIS)}; other requests to "
            f"{'these hosts' if self.hosts else 'known LLM hosts and in reverse mode'} are scanned"
        )


def _n(k: int, what: str) -> str:
    return f"{k} {what}{'' if k == 1 else 's'}"


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_NAMES_SHOWN])
    return shown + (f" +{len(names) - _NAMES_SHOWN} more" if len(names) > _NAMES_SHOWN else "")


def build_config(
    paths: Sequence[str], defaults: bool, hosts: Sequence[str], fakes_key: bytes | None = None
) -> Config:
    """Load and compile everything; fakes_key: disguise_fakes's key (fakes.load_key), None
    for placeholders. Raises MappingError or ScopeError.

    The cyclic garbage collector is held off meanwhile. A build allocates millions of
    objects (YAML nodes, tries, regex parse trees) that live until it ends, and the full
    collections they set off each scan the whole process with the GIL held: they made
    a load grow faster than its input (16k literals 12 s, 32k 43 s) and, for a reload
    built in a worker thread, held the event loop 0.3-0.4 s at a time. What the build
    drops is freed by reference counts."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _build_config(paths, defaults, hosts, fakes_key)
    finally:
        if collecting:
            gc.enable()


def _build_config(paths: Sequence[str], defaults: bool, hosts: Sequence[str], fakes_key: bytes | None) -> Config:
    host_rules = parse_hosts(hosts)
    snap = mappings.snapshot(paths, defaults)
    ms = mappings.load_layers(paths, defaults)
    rules, disguises = compiled(ms, fakes_key)
    return Config(rules, host_rules, tuple(paths), defaults, snap, disguises, fakes_key)


def compiled(
    ms: mappings.MappingSet, fakes_key: bytes | None, streams: bool = True, numbers_key: bytes | None = None
) -> tuple[Rules, Rules | None]:
    """A loaded mapping set compiled: its rules, and its literals turned around (see
    Config.disguises: no stream is restored with them). The proxy's load and the masking
    worker's (worker.py: streams=False, it restores no stream) alike. Raises MappingError."""
    try:
        rules = Rules(ms, fakes_key, streams, numbers_key)
    except Exception as e:  # a rule set that compiles alone but not combined
        # its text may quote a rule's (reason(): our own messages only, else the type)
        raise MappingError(f"{', '.join(ms.files)}: rules do not compile together: {reason(e)}") from e
    if streams:  # every stream's automaton, built here (off the loop on a reload), not at a first stream
        rules.stream_triggers(())
        readpass.prepare(rules)  # and the compiled pass's matcher
        linear.release_memory()  # what building the automaton took and freed
    disguises = None
    if ms.literals:
        turned = tuple(mappings.Literal(lit.disguise, lit.original, lit.source) for lit in ms.literals)
        disguises = Rules(mappings.MappingSet(literals=turned), streams=False)
    return rules, disguises


def log_loaded(cfg: Config, verb: str, logger: logging.Logger = log, note: str = "") -> None:
    """The warnings of a load, each shipped rule a user's file replaced, and one short
    info line (files, counts, scope, then `note`: the options that let more through);
    the full file paths and the rest at debug."""
    ms = cfg.rules.mappings
    for w in ms.warnings:
        logger.warning("disguise: %s", w)
    for w in near_misses(cfg.hosts):
        logger.warning("disguise: %s", w)
    for r in ms.replaced:
        logger.info("disguise: %s", r)
    if shipped.CHECKOUT is None and shipped.USER_MAPPINGS and tuple(cfg.paths) == shipped.USER_MAPPINGS:
        logger.warning("disguise: mappings: the working directory's %s/ folder is loaded (%s): no mappings were "
                       "named", shipped.WORKING_DIR_MAPPINGS, shipped.USER_MAPPINGS[0])  # fmt: skip
    logger.info("disguise: rules %s: %s%s", verb, cfg.describe(), note)
    if verb == "loaded":  # which engine runs (engine.py): once, at startup
        logger.info("disguise: %s", engine.describe())
    logger.debug("disguise: rules %s: %s", verb, cfg.details())
