"""The rules-loaded log line (config.describe / log_loaded): one short info line naming
the files, the counts and the scope; the full paths and the rest at debug level."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from disguiselib import config
from disguiselib.rules import mappings
from integration_util import write_mappings


def files(tmp: Path, n: int) -> list[str]:
    return [str(write_mappings(tmp, {"literals": {f"Original{i}": f"Disguise{i}x"}}, f"m{i}.yaml")) for i in range(n)]


def test_the_rules_loaded_line_is_short(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """It was 618 characters: every file's full path, every API, the scan policy."""
    folder = tmp_path / "a-rather-long-folder-name-for-mappings"
    folder.mkdir()
    paths = files(folder, 5)
    hosts = ["api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com", "openrouter.ai"]
    cfg = config.build_config(paths, True, hosts)
    with caplog.at_level(logging.DEBUG, logger="disguise"):
        config.log_loaded(cfg, "loaded")
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    [line] = [m for m in info if "rules loaded" in m]
    n = len(cfg.rules.mappings.patterns)
    assert line == (
        f"disguise: rules loaded: defaults + 5 files (m0.yaml, m1.yaml +3 more): 5 literals, {n} patterns, "
        "1 strip rule; scope: api.anthropic.com, api.openai.com +2 more"
    )
    assert len(line) < 160
    [detail] = debug
    assert str(mappings.DEFAULTS_FILE) in detail and all(p in detail for p in paths)
    assert "openrouter.ai" in detail and "anthropic.messages" in detail


def test_one_file_no_defaults_every_host(tmp_path: Path) -> None:
    cfg = config.build_config(files(tmp_path, 1), False, [])
    assert cfg.describe() == "no defaults + 1 file (m0.yaml): 1 literal, 0 patterns, 0 strip rules; scope: every host"


def test_the_readme_options_table_lists_every_option() -> None:
    """Issue 31: README's -nr text names disguise_replay_current_rules, which its options
    table lacked. Every option the addon declares has a row."""
    import re

    from conftest import REPO
    from disguiselib.config import OPTIONS

    readme = (REPO / "README.md").read_text()
    table = readme[readme.index("## Options") :]
    table = table[: table.index("\n\n", table.index("| option |"))]
    rows = set(re.findall(r"^\| `(disguise_[a-z_]+)` \|", table, re.M))
    assert rows == {o.name for o in OPTIONS}


def test_the_readme_says_what_a_re_run_under_other_rules_does() -> None:
    """The README's Replay section quotes what the re-run says (inspect/replay._advice)."""
    from conftest import REPO
    from disguiselib.inspect.replay import _advice

    readme = " ".join((REPO / "README.md").read_text().split())
    assert "the re-run is **refused**" in readme
    assert _advice("X").removeprefix("X; ") in readme


def test_a_streams_automaton_is_built_with_the_rules_not_at_its_first_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trigger automaton of 8,000 literals takes half a second to build. Built at the
    first stream of each API (one per API's markers), it held the event loop that long
    after every reload (bench/reload.py: 400-600 ms pauses of a running stream). It is
    built with the rule set (off the loop on a reload); a stream adds its markers alone."""
    from disguiselib.apis.anthropic.messages import AnthropicStream
    from disguiselib.rules import triggers
    from disguiselib.rules.restorer import Restorer

    m = tmp_path / "m.yaml"
    m.write_text("literals:\n" + "".join(f'  "Customer {i:04d} Ltd": "Zq{i:04d}xk"\n' for i in range(300)))
    cfg = config.build_config([str(m)], False, [])
    built: list[int] = []
    real = triggers.Triggers.__init__

    def spy(self, patterns, markers):  # type: ignore[no-untyped-def]
        built.append(len(set(patterns)) + len(markers))
        real(self, patterns, markers)

    monkeypatch.setattr(triggers.Triggers, "__init__", spy)
    stream = AnthropicStream(Restorer(cfg.rules, {}))
    assert stream.triggers.markers == AnthropicStream.MARKERS
    assert built and max(built) <= len(AnthropicStream.MARKERS), built


def test_the_literals_turned_around_are_built_without_the_streams_trigger_patterns(tmp_path: Path) -> None:
    """No stream is restored with the literals turned around (Config.disguises: what a
    request is checked for): built without the streams' trigger patterns (with 1,000
    literals some 16 MiB in the proxy, and as much in the masking worker). The rules
    themselves still restore streams."""
    m = tmp_path / "m.yaml"
    m.write_text("literals:\n" + "".join(f'  "Customer {i:04d} Ltd": "Zq{i:04d}xk"\n' for i in range(50)))
    cfg = config.build_config([str(m)], False, [])
    assert cfg.disguises is not None
    with pytest.raises(TypeError, match="restores no stream"):
        cfg.disguises.stream_triggers(())
    assert cfg.rules.stream_triggers(()).size > 50
    assert [s for _, s, _ in cfg.disguises.find("Zq0007xk and Zq0042xk")] == [0, 13]  # it still finds them


def test_a_built_rule_set_keeps_its_trigger_automaton_not_the_set_it_was_built_from(tmp_path: Path) -> None:
    """config.compiled builds the streams' trigger automaton with the rule set; the set of
    patterns it came from (the shipped rules' 12,000, two dicts: 1.3 MB of every proxy's
    idle memory) is let go then, and the freed heap given back (linear.release_memory:
    mitmdump's idle RSS 97.2 -> 93.5 MB). Streams of every API still get their automaton
    (the rule set's, joined with their markers)."""
    m = tmp_path / "m.yaml"
    m.write_text("literals:\n" + "".join(f'  "Customer {i:04d} Ltd": "Zq{i:04d}xk"\n' for i in range(50)))
    cfg = config.build_config([str(m)], True, [])
    base = cfg.rules.stream_triggers(())
    assert cfg.rules._trigger_patterns is None
    assert base.size > 50 and base.find(b'"text":"Zq0007xk"') == [8]
    joined = cfg.rules.stream_triggers((b"message_stop",))
    assert joined.find(b'{"type":"message_stop"} Zq0042xk') == [9, 24]
    assert cfg.rules.stream_triggers(()) is base


def test_every_size_and_count_option_takes_one_check_naming_it() -> None:
    """G1: disguise_decoded_limit=-1 was accepted (start-up and mitmweb's PUT /options)
    while disguise_capture_limit=-1 was refused: each addon checked its own. Every int
    option now has its least value in the one table, and refused_value is the one check."""
    ints = [o for o in config.OPTIONS if o.type is int]
    assert {o.name for o in ints} >= {"disguise_decoded_limit", "disguise_capture_limit",
                                      "disguise_offload_bytes", "disguise_stream_bytes"}  # fmt: skip
    for o in ints:
        assert o.least == 0, o.name
        assert config.refused_value(o.name, -1) == f"{o.name}: must be 0 or more, not -1"
        assert config.refused_value(o.name, 0) is None and config.refused_value(o.name, o.default) is None
    assert config.refused_value("disguise_hosts", -1) is None  # not a size
