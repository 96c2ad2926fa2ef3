"""One valid configuration: the compiled rules, the scope and what they came from (sans
I/O). Built from the options by the adapter, rebuilt when the mapping files change."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .core import mappings
from .core.rules import Rules
from .errors import MappingError
from .providers import registry
from .scope import HostRule, near_misses, parse_hosts

log = logging.getLogger("disguise")

# The repository's mappings/ folder: what `disguise_mappings` names by default.
DEFAULT_MAPPINGS = str(Path(__file__).resolve().parents[2] / "mappings")


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

    def describe(self) -> str:
        ms = self.rules.mappings
        hosts = ", ".join(map(str, self.hosts)) if self.hosts else "every host"
        return (
            f"{len(ms.files)} file(s) [{', '.join(ms.files)}]: {len(ms.literals)} literals, "
            f"{len(ms.patterns)} patterns, {len(ms.strips)} strip rules; scope: {hosts}; "
            f"APIs: {', '.join(registry.APIS)}; other requests to "
            f"{'these hosts' if self.hosts else 'known LLM hosts and in reverse mode'} are scanned"
        )


def build_config(paths: Sequence[str], defaults: bool, hosts: Sequence[str]) -> Config:
    """Load and compile everything. Raises MappingError or ScopeError."""
    host_rules = parse_hosts(hosts)
    snap = mappings.snapshot(paths, defaults)
    ms = mappings.load_layers(paths, defaults)
    try:
        rules = Rules(ms)
    except Exception as e:  # a rule set that compiles alone but not combined
        raise MappingError(f"{', '.join(ms.files)}: rules do not compile together: {type(e).__name__}: {e}") from e
    disguises = None
    if ms.literals:
        turned = tuple(mappings.Literal(lit.disguise, lit.original, lit.source) for lit in ms.literals)
        disguises = Rules(mappings.MappingSet(literals=turned))
    return Config(rules, host_rules, tuple(paths), defaults, snap, disguises)


def log_loaded(cfg: Config, verb: str) -> None:
    ms = cfg.rules.mappings
    for w in ms.warnings:
        log.warning("disguise: %s", w)
    for w in near_misses(cfg.hosts):
        log.warning("disguise: %s", w)
    for r in ms.replaced:
        log.info("disguise: %s", r)
    log.info("disguise: rules %s: %s", verb, cfg.describe())
