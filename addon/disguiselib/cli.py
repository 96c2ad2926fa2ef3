"""Command line: `python -m disguiselib audit|share|show ...` (see --help).

    python -m disguiselib audit session.flows            # exit 1 on any leak
    python -m disguiselib share session.flows shared.flows
    python -m disguiselib show session.flows 3           # flow 3, every side, as in mitmweb

From a checkout without installing: `PYTHONPATH=addon python -m disguiselib ...`.
"""

from __future__ import annotations

import argparse
import sys

from .config import DEFAULT_MAPPINGS


def _rules(path: str):
    from .core import mappings
    from .core.rules import Rules
    from .errors import MappingError

    try:
        return Rules(mappings.load(path))
    except MappingError as e:
        sys.exit(f"disguise: mappings: {e}")


def _read(paths: list[str]):
    from mitmproxy import exceptions

    from .inspect import flowfile

    try:
        return flowfile.read(paths)
    except (exceptions.FlowReadException, OSError) as e:
        sys.exit(f"disguise: cannot read flows: {e}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m disguiselib", description=__doc__.split("\n")[0])
    p.add_argument("--mappings", default=DEFAULT_MAPPINGS,
                   help="mapping file or folder, as for the addon (default: the repository's mappings/)")  # fmt: skip
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("audit", help="report originals that went upstream and disguises the client received")
    a.add_argument("flows", nargs="+", help="flow files (mitmdump -w)")
    a.add_argument("--show-originals", action="store_true",
                   help="print each matched text (originals!) beside its finding")  # fmt: skip
    s = sub.add_parser("share", help="write a copy holding only the provider side, credentials removed")
    s.add_argument("flows", help="flow file written with the addon")
    s.add_argument("out", help="where to write the shareable copy")
    v = sub.add_parser("show", help="print a flow's sides as the contentviews show them")
    v.add_argument("flows", help="flow file")
    v.add_argument("number", type=int, nargs="?", help="1-based flow number (default: every LLM flow)")
    args = p.parse_args(argv)

    rules = _rules(args.mappings)
    if args.cmd == "audit":
        from .inspect import audit, flowfile

        report = audit.audit(flowfile.records(_read(args.flows)), rules)
        print(report.text(args.show_originals))
        return report.exit_code()
    if args.cmd == "share":
        from .inspect import flowfile

        try:
            n, dropped = flowfile.write_shared(_read([args.flows]), args.out, rules)
        except flowfile.ShareError as e:
            print(f"disguise: {e}", file=sys.stderr)
            return 1
        print(f"{n} flows written to {args.out} (provider side only, credentials removed); "
              f"{dropped} left out (not LLM flows masked by the addon)")  # fmt: skip
        return 0
    if args.cmd == "show":
        from mitmproxy import http

        from .inspect import views
        from .providers.registry import recognise

        flows = _read([args.flows])
        for i, f in enumerate(flows, 1):
            if args.number is not None and i != args.number:
                continue
            if not isinstance(f, http.HTTPFlow):
                continue
            if f.websocket is not None:  # a realtime connection: both sides, one row per event
                from .inspect.flowfile import ws_messages
                from .inspect.wsview import render_connection

                print(f"===== flow {i} WebSocket: as it went (upstream got the masked events) =====")
                print(views.render_connection_header(f))
                print(render_connection(ws_messages(f)))
                print(f"===== flow {i} WebSocket: other sides (the client's events as sent, upstream's as sent) =====")
                print(render_connection(ws_messages(f, other=True)))
                continue
            if args.number is None and recognise(f.request.method, f.request.path) is None:
                continue
            for which in ("request", "response"):
                m = getattr(f, which)
                if m is None:
                    continue
                body = m.get_content(strict=False) or b""
                for name in views.NAMES[:2]:
                    print(f"===== flow {i} {which}: view {name!r} =====")
                    print(views.render(name, body, f, m, rules=rules))
        return 0
    return 2  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
