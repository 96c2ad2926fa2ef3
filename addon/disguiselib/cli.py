"""The `disguise` command (also `python -m disguiselib`).

    disguise run [mitmdump options]              mitmdump with the addon, on 127.0.0.1
    disguise web [mitmweb options]               mitmweb with the addon, its token auth on
    disguise audit session.flows                 exit 1 on any leak (a CI gate)
    disguise share session.flows shared.flows    provider side only, credentials removed
    disguise show session.flows 3                flow 3, every side, as mitmweb shows it
    disguise report session.flows -o r.html      one HTML page for a reviewer: summary, charts, audit
    disguise script                              the addon script, for `mitmdump -s`

Rules are loaded exactly as the addon loads them (config.build_config): the shipped
defaults, then every `--mappings PATH` (a file or a folder; repeat it; before or after
the command), or the repository's mappings/ folder in a checkout when none is given;
`--no-defaults` leaves the shipped defaults out.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import time
from collections.abc import Sequence
from typing import NoReturn

from . import __version__
from .inspect.audit import CLEAN, LEAK, NOT_PROVEN
from .inspect.record import plural

# Exit statuses. The audit's own are CLEAN 0, LEAK 1, NOT_PROVEN 2 (bodies not kept
# whole); the command adds one for "could not do it" and one for a wrong command line,
# so that a CI gate never takes a typo for a verdict.
ERROR = 3  # mappings that do not load, a flow file that cannot be read, no such flow
USAGE = 64  # the command line is wrong (sysexits.h EX_USAGE)

EXIT_TEXT = f"""exit status: {CLEAN} clean, {LEAK} leak, {NOT_PROVEN} not proven (bodies not kept whole, \
rules that masked a flow not loaded), \
{ERROR} error (mappings, flow files, no such flow), {USAGE} usage error"""

MITM_COMMANDS = ("run", "web")


class _Parser(argparse.ArgumentParser):
    """argparse, with its usage errors on their own exit status (argparse uses 2, the
    audit's "not proven")."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(USAGE, f"{self.prog}: error: {message}\n")

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        """An option this parser and the chosen command's do not know is named with the
        nearest known one ("did you mean --version?") before argparse reads the line (it
        would say only that a command is required, or "unrecognized arguments")."""
        argv = list(sys.argv[1:] if args is None else args)
        known = set(self._option_string_actions)
        for a in argv:
            if a == "--":
                break
            if not a.startswith("-") and a in self._commands():
                known |= set(self._commands()[a]._option_string_actions)
        for a in argv:
            if a == "--":
                break
            name = a.split("=", 1)[0]
            if name.startswith("--") and name not in known:
                near = difflib.get_close_matches(name, sorted(o for o in known if o.startswith("--")), n=1, cutoff=0.6)
                self.error(f"unrecognized option {name}" + (f": did you mean {near[0]}?" if near else ""))
        return super().parse_args(argv, namespace)

    def _commands(self) -> dict[str, argparse.ArgumentParser]:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return dict(action.choices)
        return {}


def _rule_options(p: argparse.ArgumentParser, where: str) -> None:
    # Before the command and after it land in different places (argparse would let the
    # command's values replace the top level's); _paths joins them in order.
    p.add_argument("--mappings", action="append", dest=f"mappings_{where}", metavar="PATH", default=[],
                   help="mapping file or folder, on top of the shipped defaults; repeat for more "
                        "(default: the repository's mappings/ folder in a checkout; installed, ./mappings/ "
                        "when it holds files of yours)")  # fmt: skip
    p.add_argument("--no-defaults", action="store_true", dest=f"no_defaults_{where}",
                   help="leave the shipped default mappings out")  # fmt: skip


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="disguise", description=__doc__.split("\n")[0].strip(), epilog=EXIT_TEXT, allow_abbrev=False)
    p.add_argument("--version", action=_Version, help="show the versions and the engine in use, and exit")
    _rule_options(p, "pre")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    sub.add_parser("run", help="mitmdump with the addon loaded (every other argument goes to mitmdump)", add_help=False)
    sub.add_parser("web", help="mitmweb with the addon loaded (every other argument goes to mitmweb)", add_help=False)
    a = sub.add_parser("audit", help="report originals that went upstream and disguises the client received",
                       epilog=EXIT_TEXT, allow_abbrev=False)  # fmt: skip
    a.add_argument("flows", nargs="+", help="flow files (mitmdump -w)")
    a.add_argument("--show-originals", action="store_true",
                   help="print each matched text (originals!) beside its finding")  # fmt: skip
    _rule_options(a, "post")
    s = sub.add_parser("share", help="write a copy holding only the provider side, credentials removed",
                       allow_abbrev=False)  # fmt: skip
    s.add_argument("flows", help="flow file written with the addon")
    s.add_argument("out", help="where to write the shareable copy")
    _rule_options(s, "post")
    v = sub.add_parser("show", help="print a flow's sides as the contentviews show them", allow_abbrev=False)
    v.add_argument("flows", help="flow file")
    v.add_argument("number", type=_positive, nargs="?", help="1-based flow number (default: every LLM flow)")
    _rule_options(v, "post")  # the rules whose originals and disguises the views mark
    r = sub.add_parser("report", help="write one self-contained HTML page of a session: summary, charts, refusals, "
                       "the audit's verdict (no original in it)", epilog=EXIT_TEXT, allow_abbrev=False)  # fmt: skip
    r.add_argument("flows", nargs="+", help="flow files (mitmdump -w)")
    r.add_argument("-o", "--output", metavar="PATH",
                   help="where to write the page (default: the first flow file's name with .report.html)")  # fmt: skip
    _rule_options(r, "post")
    sub.add_parser("script", help="print the path of the addon script, for `mitmdump -s`")
    return p


def _positive(s: str) -> int:
    try:
        n = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a flow number: {s!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"flow numbers start at 1: {s!r}")
    return n


class _Version(argparse.Action):
    """--version: the line as it is (argparse's own action wraps it at the terminal's width)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(version_text())
        parser.exit()


def version_text() -> str:
    from mitmproxy.version import VERSION

    from . import engine

    return f"disguise {__version__} (mitmproxy {VERSION}, Python {sys.version.split()[0]}; {engine.describe()})"


# -- run / web: everything after the command is mitmproxy's --------------------------------


def _split_mitm(argv: Sequence[str]) -> tuple[list[str], str, list[str]] | None:
    """(top-level arguments, "run" | "web", the rest) when the command is run or web;
    None otherwise. Only disguise's own options may come before the command."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in MITM_COMMANDS:
            return list(argv[:i]), a, list(argv[i + 1 :])
        if a == "--mappings":  # (its path checked where it is read: _pull_rules, argparse)
            i += 2
        elif a.startswith("--mappings=") or a == "--no-defaults":
            i += 1
        else:
            return None
    return None


def _pull_rules(args: list[str]) -> tuple[list[str], list[str], bool]:
    """disguise's --mappings / --no-defaults out of run's or web's arguments (mitmproxy
    has no options of these names): (the rest, mapping paths, no_defaults)."""
    rest: list[str] = []
    paths: list[str] = []
    no_defaults = False
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--mappings":
            paths.append(_mappings_path(args, i))
            i += 2
            continue
        if a.startswith("--mappings="):
            paths.append(_mappings_path([a.partition("=")[2]], -1))
        elif a == "--no-defaults":
            no_defaults = True
        else:
            rest.append(a)
        i += 1
    return rest, paths, no_defaults


def _mappings_path(args: Sequence[str], i: int) -> str:
    """The path after the --mappings at args[i]. A usage error where there is none, or
    where the next argument is an option (`--mappings --set x=y`: the `--set` taken for a
    path, and `x=y` given to mitmproxy as one)."""
    path = args[i + 1] if i + 1 < len(args) else ""
    if not path or path.startswith("-"):
        print("disguise: error: --mappings needs a file or folder after it", file=sys.stderr)
        raise SystemExit(USAGE)
    return path


def _mitm(top: list[str], tool: str, args: list[str]) -> int:
    from .launch import launch

    _, pre, no_pre = _pull_rules(top)
    rest, post, no_post = _pull_rules(args)
    return launch(tool, rest, pre + post, not (no_pre or no_post))


# -- audit / share / show ------------------------------------------------------------------


def _fail(message: str) -> NoReturn:
    print(f"disguise: {message}", file=sys.stderr)
    raise SystemExit(ERROR)


def _config(args: argparse.Namespace, quiet: bool = False):
    """The rules, loaded as the addon loads them; a one-line summary on stderr (none
    when quiet: `show` prints what it is asked for and nothing else)."""
    import logging

    from .config import DEFAULT_MAPPINGS, build_config, log_loaded
    from .errors import MappingError

    paths = [*args.mappings_pre, *getattr(args, "mappings_post", [])] or list(DEFAULT_MAPPINGS)
    defaults = not (args.no_defaults_pre or getattr(args, "no_defaults_post", False))
    try:
        cfg = build_config(paths, defaults, [])
    except MappingError as e:
        _fail(f"mappings: {e}")
    if quiet:
        return cfg
    # the addon's own log lines (warnings, the one-line summary), on stderr
    logger = logging.getLogger("disguise.cli")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(h)
    try:
        log_loaded(cfg, "loaded", logger)
    finally:
        logger.removeHandler(h)
    return cfg


class Progress:
    """Progress of a long step on stderr: nothing for the first second, then at most
    one update a second on a terminal (one line, rewritten) and one every 10 s
    elsewhere (CI logs)."""

    def __init__(self, what: str, stream=None) -> None:
        self.what = what
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self.start = self.last = time.monotonic()
        self.shown = False

    def __call__(self, done: int, total: int | None = None, unit: str = "") -> None:
        now = time.monotonic()
        if now - self.start < 1 or now - self.last < (1 if self.tty else 10):
            return
        self.last = now
        if total:
            text = f"{self.what}: {done:,} of {total:,}{unit} ({100 * done // total}%)"
        else:
            text = f"{self.what}: {done:,}{unit}"
        self.stream.write(f"\r{text}\x1b[K" if self.tty else f"{text}\n")
        self.stream.flush()
        self.shown = True

    def end(self) -> None:
        if self.shown and self.tty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _read(paths: list[str], progress: bool = False):
    from mitmproxy import exceptions

    from .inspect import flowfile

    p = Progress(f"reading {', '.join(os.path.basename(x) for x in paths)}") if progress else None
    try:
        return flowfile.read(paths, (lambda d, t: p(d // 1_000_000, t // 1_000_000, " MB")) if p else None)
    except exceptions.FlowReadException as e:
        _fail(f"cannot read flows: {e}")
    finally:
        if p is not None:
            p.end()


def _audit(args: argparse.Namespace) -> int:
    from mitmproxy import exceptions

    from .inspect import audit, flowfile

    flows = _read(args.flows, progress=True)  # a file that cannot be read fails before rules compile
    cfg = _config(args)
    p = Progress("auditing")
    try:
        records = flowfile.records(flows)
    except exceptions.FlowReadException as e:  # a body that cannot be decoded: never "clean"
        p.end()
        _fail(f"cannot read flows: {e}")
    report = audit.audit(records, cfg.rules, lambda n: p(n, len(flows), " flows"))
    p.end()
    code = report.exit_code()
    try:
        print(report.text(args.show_originals))
    except BrokenPipeError:  # `disguise audit ... | head`: the verdict stands
        _quiet_stdout()
    return code


def _share(args: argparse.Namespace) -> int:
    from .inspect import flowfile

    flows = _read([args.flows], progress=True)
    cfg = _config(args)
    try:
        n, dropped, removed = flowfile.write_shared(flows, args.out, cfg.rules)
    except flowfile.ShareError as e:
        print(f"disguise: {e}", file=sys.stderr)
        return LEAK
    except OSError as e:
        _fail(f"cannot write {args.out}: {e.strerror}")
    print(f"{plural(n, 'flow')} written to {args.out} (provider side only, credentials removed); "
          f"{flowfile.left_out_text(dropped)}")  # fmt: skip
    if removed:
        print(flowfile.replay_note(removed))
    return CLEAN


def _show(args: argparse.Namespace) -> int:
    from mitmproxy import http

    from .apis.registry import recognise
    from .inspect import views

    flows = _read([args.flows])
    rules = _config(args, quiet=True).rules  # what the views mark: originals and disguises
    if args.number is not None and args.number > len(flows):
        _fail(f"{args.flows}: no flow {args.number}: the file holds {plural(len(flows), 'flow')}")
    shown = 0
    for i, f in enumerate(flows, 1):
        if args.number is not None and i != args.number:
            continue
        if not isinstance(f, http.HTTPFlow):
            if args.number is not None:
                _fail(f"{args.flows}: flow {i} is a {type(f).__name__}, not an HTTP flow")
            continue
        if f.websocket is not None:  # a realtime connection: both sides, one row per event
            from .inspect.flowfile import ws_messages
            from .inspect.wsview import render_connection

            shown += 1
            print(f"===== flow {i} WebSocket: as it went (upstream got the masked events) =====")
            print(views.render_connection_header(f))
            print(render_connection(ws_messages(f)))
            print(f"===== flow {i} WebSocket: other sides (the client's events as sent, upstream's as sent) =====")
            print(render_connection(ws_messages(f, other=True)))
            continue
        if args.number is None and recognise(f.request.method, f.request.path) is None:
            continue
        shown += 1
        for which in ("request", "response"):
            m = getattr(f, which)
            if m is None:
                continue
            body = m.get_content(strict=False) or b""
            for name in views.NAMES[:2]:
                print(f"===== flow {i} {which}: view {name!r} =====")
                print(views.render(name, body, f, m, rules=rules))
    if not shown and args.number is None:
        print(f"{args.flows}: no LLM flows among its {plural(len(flows), 'flow')} (name one by its number to see it)",
              file=sys.stderr)  # fmt: skip
    return CLEAN


def _report(args: argparse.Namespace) -> int:
    """The page, written whole or not at all; the exit status is the audit's verdict."""
    import tempfile
    from pathlib import Path

    from .inspect import report

    flows = _read(args.flows, progress=True)
    cfg = _config(args)
    out = Path(args.output) if args.output else Path(args.flows[0]).with_suffix(".report.html")
    source = ", ".join(os.path.basename(p) for p in args.flows)
    summary = report.summarize(flows, cfg.rules, source, cfg.describe())
    try:
        text = report.render(summary, cfg.rules, __version__)
    except report.ReportError as e:
        _fail(str(e))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".disguise-report-", suffix=".html", dir=out.parent.resolve())
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, out)
    except OSError as e:
        _fail(f"cannot write {out}: {e.strerror}")
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    print(f"report written to {out}: {summary.report.verdict()}")
    return summary.report.exit_code()


def _script(args: argparse.Namespace) -> int:
    from . import shipped

    print(shipped.SCRIPT)
    return CLEAN


COMMANDS = {"audit": _audit, "share": _share, "show": _show, "report": _report, "script": _script}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        mitm = _split_mitm(argv)
        if mitm is not None:
            return _mitm(*mitm)
        args = parser().parse_args(argv)
        return COMMANDS[args.cmd](args)
    except BrokenPipeError:  # the reader went away (`disguise show ... | head`)
        _quiet_stdout()
        return CLEAN
    except KeyboardInterrupt:
        return 130


def _quiet_stdout() -> None:
    """End quietly after the reader of stdout went away: Python would complain once
    more when it flushes stdout at exit, so stdout now points at nothing."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
