"""Contentviews for mitmweb and the mitmproxy console (adapter-level).

Three views, for any HTTP message; on LLM flows the addon handled, "Disguise" is picked
automatically:
- "Disguise": this message as mitmproxy holds it — the request as it went upstream
  (masked) or the response as the client received it (restored) — a stream as one row
  per event and the reassembled text of each channel (render.py), JSON pretty-printed.
  The flow's summary is its first line.
- "Disguise other side": the same rendering of the other side of this message — the
  request as the client sent it, the response as upstream sent it.
- "Disguise diff": a unified diff of the two renderings.

Marked spans (`⟦…⟧`): on the provider's side (what went upstream, what upstream sent)
every disguise and every placeholder issued for this flow; on the client's side every
original (what masking replaces). Found with the rules in force when the view is shown.

mitmproxy 11 has `contentviews.View` (a callable returning lines of styled segments,
`add` refuses a name twice); 12 has the `Contentview` protocol (`prettify` returns
text, `add` replaces). Both are served from the same lines (`render_lines`). mitmweb
11 draws each line as a `<div>` of `<span>`s, so an empty line has no height and blank
lines vanish: there an empty line is sent as one space.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mitmproxy import contentviews, http

from ..apis.registry import recognise
from ..wire.jsonspan import Rule
from . import render as rd
from . import sseview
from .record import FORWARDED, FORWARDED_TEXT, META, NEVER_SENT, REQUEST_NOT_KEPT, SIDES, is_refused, summary_text

if TYPE_CHECKING:
    from ..rules.rules import Rules
    from . import wsview
    from .audit import Auditor

NAMES = ("Disguise", "Disguise other side", "Disguise diff")
_AUTO_PRIORITY = 2.0  # above the JSON view (1) on flows the addon handled

PROVIDER, CLIENT = "provider", "client"  # which side of the proxy a rendering shows
_rules_in_force: Callable[[], Rules | None] = lambda: None  # noqa: E731 - set by register()


def _which(flow: Any, message: Any) -> str | None:
    if not isinstance(flow, http.HTTPFlow) or message is None:
        return None
    if message is flow.request:
        return "request"
    if message is flow.response:
        return "response"
    return None


def _this(flow: http.HTTPFlow, which: str) -> tuple[str, str]:
    """(label, side) of flow.<which> as mitmproxy holds it."""
    meta = flow.metadata.get(META) or {}
    if is_refused(flow):
        return {"request": (f"request as the addon held it: {NEVER_SENT.upper()} (refused: see the summary)", CLIENT),
                "response": (f"the addon's refusal, as the client received it (the request was {NEVER_SENT})",
                             CLIENT)}[which]  # fmt: skip
    if meta.get("shared"):
        return {"request": ("request as it went upstream (masked)", PROVIDER),
                "response": ("response as upstream sent it (shared copy: the client side is not in it)",
                             PROVIDER)}[which]  # fmt: skip
    if flow.metadata.get(FORWARDED):
        return {"request": ("request as it went upstream (NOT masked: disguise_allow_unknown)", CLIENT),
                "response": ("response as the client received it (not restored)", CLIENT)}[which]  # fmt: skip
    if meta.get("dry_run"):
        return {"request": ("request as recorded without the addon (NOT masked)", CLIENT),
                "response": ("response as recorded without the addon", CLIENT)}[which]  # fmt: skip
    if META in flow.metadata and SIDES not in flow.metadata:
        return {"request": ("request as the client sent it (not masked: see the summary)", CLIENT),
                "response": ("response as the client received it", CLIENT)}[which]  # fmt: skip
    return {"request": ("request as it went upstream (masked)", PROVIDER),
            "response": ("response as the client received it (restored)", CLIENT)}[which]  # fmt: skip


def _other(flow: http.HTTPFlow, which: str) -> tuple[str, bytes | None, str]:
    """(label, body or None, note) of the other side of flow.<which>."""
    sides = flow.metadata.get(SIDES)
    key, label = (("client_request", "request as the client sent it") if which == "request"
                  else ("upstream_response", "response as upstream sent it"))  # fmt: skip
    s = sides.get(key) if isinstance(sides, dict) else None
    if not isinstance(s, dict) or "content" not in s:
        meta = flow.metadata.get(META) or {}
        if meta.get("shared") and which == "response":
            return "response as the client received it", None, "not in a shared copy"
        return label, None, "not kept (not an LLM flow the addon handled, or disguise_capture_limit=0)"
    note = ""
    if s.get("cut"):
        note = f"CUT: {len(s['content'])} of {s.get('size')} bytes kept (disguise_capture_limit)"
    if s.get("encoding"):
        note += f"{'; ' if note else ''}content-encoding {s['encoding']}: not decoded"
    return label, s["content"], note


def _ctype(flow: http.HTTPFlow, which: str) -> str:
    m = flow.request if which == "request" else flow.response
    return m.headers.get("content-type", "") if m is not None else ""


_auditor: list = [None, None]  # [rules, Auditor(rules)]: built once per rule set


def _marker(flow: http.HTTPFlow, side: str, rules: Rules | None) -> rd.Marker | None:
    """What to bracket on `side`: disguises and this flow's placeholders on the
    provider's, originals on the client's."""
    if rules is None:
        return None
    if side == CLIENT:
        return lambda text: [(a, b) for _, a, b in rules.find(text)]
    if _auditor[0] is not rules:
        from .audit import Auditor  # (with flowfile and wsview, first imported by a view shown: never by mitmdump)

        _auditor[:] = [rules, Auditor(rules)]
    aud: Auditor = _auditor[1]
    meta = flow.metadata.get(META)
    fakes = frozenset(meta.get("fakes") or ()) if isinstance(meta, dict) else frozenset()
    issued = aud.issued(flow.request.get_content(strict=False), fakes)
    return lambda text: [(a, b) for _, a, b in aud.disguises(text, issued)]


_LEGEND = {
    (PROVIDER, "request"): "disguises and placeholders (what the provider read)",
    (PROVIDER, "response"): "disguises and placeholders (as the provider wrote them)",
    (CLIENT, "request"): "originals (masked before the request went upstream)",
    (CLIENT, "response"): "originals (the client reads these)",
    (CLIENT, "refused"): f"originals (the request was refused: {NEVER_SENT})",
    (CLIENT, "unmasked"): "originals (they went upstream as they are: NOT masked)",
}


def _went_unmasked(flow: http.HTTPFlow) -> bool:
    """Did the request go upstream as the client sent it (disguise_fail_open), or holding
    an original (disguise_allow_unknown)?"""
    meta = flow.metadata.get(META)
    failed = str(meta.get("failed", "")) if isinstance(meta, dict) else ""
    return bool(flow.metadata.get(FORWARDED)) or failed.startswith("forwarded UNMASKED")


def _header(flow: http.HTTPFlow) -> list[rd.Line]:
    meta = flow.metadata.get(META)
    if not isinstance(meta, dict):
        if is_refused(flow):  # recorded before refusals had a summary: the same words
            return [[(rd.ERROR, f"disguise: FAILED CLOSED (refused by the addon): {NEVER_SENT}")]]
        if flow.metadata.get(FORWARDED):
            return rd.wrap([(rd.ERROR, f"{FORWARDED_TEXT}: {flow.metadata[FORWARDED]}")])
        return [[(rd.NOTE, "disguise: this flow was not handled by the addon")]]
    style = rd.ERROR if meta.get("failed") else rd.HEAD
    out: list[rd.Line] = rd.wrap([(style, summary_text(meta))])
    if meta.get("replay"):
        out.append([(rd.TEXT, f"replay: {meta['replay']}")])
    return out


def _legend(side: str, which: str, marker: rd.Marker | None) -> list[rd.Line]:
    if marker is None:
        return []
    return [[(rd.TEXT, "marked: "), (rd.MARK, rd.OPEN + "…" + rd.CLOSE), (rd.TEXT, " " + _LEGEND[side, which])]]


_WS_CACHE: dict[str, tuple[int, wsview.WsStream, dict[int, int]]] = {}


def _ws_parsed(flow: http.HTTPFlow) -> tuple[wsview.WsStream, dict[int, int]]:
    """The flow's messages parsed once (mitmweb renders every message of a flow in a
    row: not once per message), and the index of each message object."""
    from . import wsview
    from .flowfile import ws_messages

    n = len(flow.websocket.messages) if flow.websocket is not None else 0
    hit = _WS_CACHE.get(flow.id)
    if hit is not None and hit[0] == n:
        return hit[1], hit[2]
    if len(_WS_CACHE) > 8:
        _WS_CACHE.clear()
    parsed = wsview.parse(ws_messages(flow))
    index = {id(m): i for i, m in enumerate(flow.websocket.messages)} if flow.websocket is not None else {}
    _WS_CACHE[flow.id] = (n, parsed, index)
    return parsed, index


def render_connection_header(flow: http.HTTPFlow) -> str:
    """The summary lines of a flow, as every view starts."""
    return rd.text_of(_header(flow))


def render_ws(view: str, data: bytes, flow: http.HTTPFlow, msg: Any) -> str:
    """A WebSocket message of a realtime flow: as it went, its other side, or the diff;
    for one that carries a channel's text, that channel reassembled up to it."""
    from . import wsview

    parsed, index = _ws_parsed(flow)
    i = index.get(id(msg))
    lines = render_connection_header(flow).split("\n")
    if i is None:
        return "\n".join([*lines, "", wsview.render_message(data)])
    m = parsed.events[i].msg
    where = "client event as it went upstream (masked)" if m.from_client else "event as the client received it"
    if m.state == wsview.DROPPED:
        where = ("client event NOT forwarded" if m.from_client
                 else "upstream event, not forwarded as it is (held back, replaced, or the connection was ended)")
    elif m.state == wsview.INJECTED:
        where = "event disguise sent to the client in place of dropped ones"
    other = None
    sides = flow.metadata.get(SIDES)
    for item in (sides.get("websocket_other") or ()) if isinstance(sides, dict) else ():
        if isinstance(item, list | tuple) and len(item) == 2 and int(item[0]) == i:
            other = bytes(item[1])
    other_label = "client event as the client sent it" if m.from_client else "event as upstream sent it"
    lines.append(f"message {i + 1} of {len(parsed.events)}: {where}")
    if view == NAMES[0]:
        lines += ["", wsview.render_message(data)]
        for c in parsed.channels.values():
            pieces = [p for p in c.pieces if p.event == i + 1]
            if pieces:
                end = pieces[-1].start + len(c.parts[c.pieces.index(pieces[-1])])
                lines += ["", f"── {c.label}, reassembled up to here ──", c.text[:end]]
        return "\n".join(lines)
    if view == NAMES[1]:
        if other is None:
            return "\n".join([*lines, f"other side: {other_label}: the same bytes (unchanged)"])
        return "\n".join([*lines, f"other side: {other_label}", "", wsview.render_message(other)])
    if other is None:
        return "\n".join([*lines, "", "(no difference)"])
    a = wsview.render_message(other).splitlines()
    b = wsview.render_message(data).splitlines()
    return "\n".join([*lines, "", *difflib.unified_diff(a, b, other_label, where, lineterm="", n=1)])


def _table(flow: http.HTTPFlow, which: str) -> Rule | None:
    """The field table of this side of an LLM flow (its API's request or response rule)."""
    api = recognise(flow.request.method, flow.request.path)
    if api is None:
        return None
    if which == "request":
        return api.request_rule if api.request_body is None else None
    return api.response_rule


def _untouched(body: bytes, table: Rule | None) -> list[rd.Line]:
    """The fields the API's table exempts by design (sseview.untouched), after the body."""
    extra = sseview.untouched_in(body, table)
    return [[], *([(rd.NOTE, line)] for line in extra)] if extra else []


def render_lines(view: str, data: bytes, flow: Any, message: Any, content_type: str = "", ws_message: Any = None,
                 rules: Rules | None = None) -> list[rd.Line]:  # fmt: skip
    """The styled lines of view `view` (one of NAMES) for data, the body of message in
    flow (or the WebSocket message ws_message of flow); rules (default: the rules in
    force) say what to mark."""
    if ws_message is not None and isinstance(flow, http.HTTPFlow) and flow.websocket is not None:
        return rd.text_lines(render_ws(view, data, flow, ws_message))
    which = _which(flow, message)
    if rules is None:
        rules = _rules_in_force()
    if which is None:  # not an HTTP flow message: just the body
        return rd.body_lines(data, content_type)
    ctype = _ctype(flow, which)
    this_label, this_side = _this(flow, which)
    lines = _header(flow)
    table = _table(flow, which)
    if view == NAMES[0]:
        mark = _marker(flow, this_side, rules)
        up = _other(flow, which)[1] if which == "response" and this_side == CLIENT else None
        lines += rd.wrap([(rd.TEXT, f"this: {this_label} — {len(data)} bytes")])
        gone = flow.metadata.get(REQUEST_NOT_KEPT) if which == "request" else None
        if gone:  # streamed upstream, past the capture limit (inspector.request)
            lines.append([(rd.ERROR, f"[NOT KEPT: {gone} bytes streamed upstream, more than disguise_capture_limit]")])
        kind = "refused" if which == "request" and is_refused(flow) else which
        kind = "unmasked" if which == "request" and this_side == CLIENT and _went_unmasked(flow) else kind
        legend = _legend(this_side, kind, mark)
        return [*lines, *legend, [], *rd.body_lines(data, ctype, mark, up),
                *_untouched(data, table)]  # fmt: skip
    label, other, note = _other(flow, which)
    if view == NAMES[1]:
        other_side = CLIENT if which == "request" else PROVIDER
        mark = _marker(flow, other_side, rules)
        size = f" — {len(other)} bytes" if other is not None else ""
        lines += rd.wrap([(rd.TEXT, f"other side: {label}{size}")])
        if note:
            lines.append([(rd.ERROR, f"[{note}]")])
        if other is None:
            return lines
        return [*lines, *_legend(other_side, which, mark), [], *rd.body_lines(other, ctype, mark),
                *_untouched(other, table)]  # fmt: skip
    # diff
    if other is None:
        return [*lines, [(rd.NOTE, f"no diff: the {label} was {note}")]]
    a = rd.render_body(other, ctype).splitlines()
    b = rd.render_body(data, ctype).splitlines()
    diff = list(difflib.unified_diff(a, b, label, this_label, lineterm="", n=1))
    if note:
        lines.append([(rd.ERROR, f"[{note}]")])
    return [*lines, [], *([[(_diff_style(d), d)] for d in diff] or [[(rd.NOTE, "(no difference)")]])]


def _diff_style(line: str) -> str:
    """A unified diff's line in the colour of what it says: removed, added, a hunk."""
    if line.startswith(("---", "+++")):
        return rd.HEAD
    if line.startswith("@@"):
        return rd.NUM
    return {"-": rd.REMOVED, "+": rd.ADDED}.get(line[:1], rd.TEXT)


def render(view: str, data: bytes, flow: Any, message: Any, content_type: str = "", ws_message: Any = None,
           rules: Rules | None = None) -> str:  # fmt: skip
    """The text of view `view` (one of NAMES): render_lines without styles."""
    return rd.text_of(render_lines(view, data, flow, message, content_type, ws_message, rules))


def priority(view: str, data: bytes, flow: Any) -> float:
    if view == NAMES[0] and isinstance(flow, http.HTTPFlow) and isinstance(flow.metadata.get(META), dict) and data:
        return _AUTO_PRIORITY
    return -1.0 if _NEW_API else 0.0


_NEW_API = hasattr(contentviews, "Contentview")
# The two versions' contentview APIs differ in their types: one module object, typed
# loosely, serves both branches below (each runs on its own version only).
_cv: Any = contentviews

# mitmweb 11 / console CSS classes and palette entries for render.py's styles.
_STYLE_11 = {rd.TEXT: "text", rd.HEAD: "header", rd.NUM: "offset", rd.CHAN: "Token_Name_Tag",
             rd.MARK: "Token_Literal_String", rd.NOTE: "Token_Literal_Number", rd.ERROR: "highlight",
             rd.REMOVED: "Token_Literal_String", rd.ADDED: "Token_Name_Tag"}  # fmt: skip


def lines_11(lines: list[rd.Line]) -> list[list[tuple[str, str]]]:
    """render.py's lines as mitmproxy 11 view lines: styles mapped to its classes, an
    empty line as one space (mitmweb 11 gives an empty line no height)."""
    return [[(_STYLE_11.get(st, "text"), t) for st, t in line] or [("text", " ")] for line in lines]


def _set_rules(rules: Callable[[], Rules | None] | None) -> None:
    global _rules_in_force
    if rules is not None:
        _rules_in_force = rules


if _NEW_API:  # mitmproxy 12

    class _View:
        syntax_highlight = "none"

        def __init__(self, name: str) -> None:
            self._name = name

        @property
        def name(self) -> str:
            return self._name

        def prettify(self, data: bytes, metadata: Any) -> str:
            return render(self._name, data, metadata.flow, metadata.http_message, metadata.content_type or "",
                          getattr(metadata, "websocket_message", None))  # fmt: skip

        def render_priority(self, data: bytes, metadata: Any) -> float:
            return priority(self._name, data, metadata.flow)

        def __lt__(self, other: Any) -> bool:
            return self.name < other.name

    def register(rules: Callable[[], Rules | None] | None = None) -> list:
        """Add the views; rules() gives the rules in force (what to mark)."""
        _set_rules(rules)
        views = [_View(n) for n in NAMES]
        for v in views:
            _cv.add(v)
        return views

    def unregister(views: list) -> None:
        pass  # 12 replaces a view of the same name when the script is reloaded

else:  # mitmproxy 11
    from mitmproxy.contentviews import base as _base

    class _LegacyView(_base.View):
        def __init__(self, name: str) -> None:
            self.name = name  # type: ignore[misc]

        def __call__(self, data: bytes, *, content_type=None, flow=None, http_message=None, **unknown):
            lines = render_lines(self.name, data, flow, http_message, content_type or "",
                                 unknown.get("websocket_message"))  # fmt: skip
            return self.name, iter(lines_11(lines))

        def render_priority(self, data: bytes, *, content_type=None, flow=None, http_message=None, **unknown):
            return priority(self.name, data, flow)

    def register(rules: Callable[[], Rules | None] | None = None) -> list:
        """Add the views; rules() gives the rules in force (what to mark)."""
        _set_rules(rules)
        views = []
        for n in NAMES:
            old = _cv.get(n)
            if old is not None:  # a reloaded script: 11 refuses a name twice
                _cv.remove(old)
            v = _LegacyView(n)
            _cv.add(v)
            views.append(v)
        return views

    def unregister(views: list) -> None:
        for v in views:
            if v in _cv.views:
                _cv.remove(v)
