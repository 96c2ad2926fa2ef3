"""The text a person reads in the contentviews, sans I/O: styled lines for any body.

A line is a list of (style, text) segments; `text_of` joins them. mitmproxy 11's
mitmweb styles each segment (views.py maps the styles to its CSS classes); 12 shows
plain text, so everything a style says is also said by the text itself: marked spans
are bracketed `⟦…⟧`.

A stream (any framing sseview knows) reads as:
- a head line: how many events and channels, whether the final event came;
- each channel's reassembled text, blank lines kept, JSON text pretty-printed;
- one row per event: its number, its type, the channel it feeds and the text it
  carried, newlines shown as `⏎` so a row stays one line. The envelope (ids, model,
  `object`, indices) is folded away; an event that carries no text shows what else it
  says (a stop reason, a tool's name, an error). The whole event is one view away (Raw).

`mark(text) -> [(start, end)]` says which spans to mark (views.py builds it from the
rules: disguises on the provider side, originals on the client side). Spans are found
in each channel's whole text, then cut to each event's piece: a disguise that arrived
in three deltas is marked in all three rows.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Callable

from . import sseview
from .record import plural

Segment = tuple[str, str]
Line = list[Segment]
Marker = Callable[[str], list[tuple[int, int]]]

# Styles: what a segment is. views.py maps them to mitmweb 11's CSS classes.
TEXT, HEAD, NUM, CHAN, MARK, NOTE, ERROR = "text", "head", "num", "chan", "mark", "note", "error"
ADDED, REMOVED = "added", "removed"  # a diff's lines
OPEN, CLOSE = "⟦", "⟧"
# Long lines of prose (the summary, a channel's reassembled text) are wrapped at this
# many characters, at a space where there is one, each cut line ending in WRAP_MARK:
# mitmweb draws a view's lines unwrapped, and its flow pane is about 85 characters
# wide in a 1400-pixel window.
WRAP = 80
WRAP_MARK = "↩"
HELD = "held back: its text went out with a later event"
# Characters a row shows in place of line breaks (same length: span offsets still hold).
_ROW_SAFE = str.maketrans({"\n": "⏎", "\r": "␍", "\t": "⇥"})

MAX_ROW_CHARS = sseview.MAX_EVENT_CHARS  # text shown per event row
MAX_KIND_WIDTH = 28
MAX_CHANNEL_WIDTH = 32


def text_of(lines: list[Line]) -> str:
    return "\n".join("".join(t for _, t in line) for line in lines)


def _segments(text: str, spans: list[tuple[int, int]], style: str = TEXT) -> list[Segment]:
    """text as segments, each span in `spans` (sorted, not overlapping) bracketed and
    in the MARK style."""
    out: list[Segment] = []
    pos = 0
    for a, b in spans:
        a, b = max(a, pos), min(b, len(text))
        if a >= b:
            continue
        if a > pos:
            out.append((style, text[pos:a]))
        out.append((MARK, OPEN + text[a:b] + CLOSE))
        pos = b
    if pos < len(text):
        out.append((style, text[pos:]))
    return out


def _split_lines(segments: list[Segment]) -> list[Line]:
    """Segments cut at line ends into lines (blank lines kept as empty lines)."""
    lines: list[Line] = [[]]
    for style, text in segments:
        parts = text.split("\n")
        for i, part in enumerate(parts):
            if i:
                lines.append([])
            if part:
                lines[-1].append((style, part))
    return lines


def text_lines(text: str, mark: Marker | None = None, style: str = TEXT) -> list[Line]:
    """Any text as lines, marked spans bracketed."""
    spans = _clean(mark(text)) if mark is not None and text else []
    return _split_lines(_segments(text, spans, style))


def wrap(line: Line, width: int = WRAP) -> list[Line]:
    """line cut into lines of at most width characters (the mark included), at the
    last space of a line's second half when it has one; styles kept. Linear: each cut
    looks back at most width characters."""
    text = "".join(t for _, t in line)
    if len(text) <= width:
        return [line]
    cuts: list[int] = []
    pos = 0
    while len(text) - pos > width:
        end = pos + width - len(WRAP_MARK)
        space = text.rfind(" ", pos + width // 2, end)
        pos = space + 1 if space >= 0 else end
        cuts.append(pos)
    out: list[Line] = [[]]
    at, ci = 0, 0  # offset of the current segment, next cut
    for style, t in line:
        i = 0
        while ci < len(cuts) and cuts[ci] < at + len(t):
            k = cuts[ci] - at
            if k > i:
                out[-1].append((style, t[i:k]))
            out[-1].append((NOTE, WRAP_MARK))
            out.append([])
            i, ci = k, ci + 1
        if i < len(t):
            out[-1].append((style, t[i:]))
        at += len(t)
    return out


def wrapped(lines: list[Line], width: int = WRAP) -> list[Line]:
    return [piece for line in lines for piece in wrap(line, width)]


def _clean(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, overlapping spans merged."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        elif a < b:
            out.append((a, b))
    return out


def _cut(spans: list[tuple[int, int]], starts: list[int], start: int, end: int) -> list[tuple[int, int]]:
    """The parts of spans inside [start, end), relative to start. starts: the spans'
    start offsets (for bisect)."""
    out = []
    i = max(bisect_right(starts, start) - 1, 0)
    while i < len(spans) and spans[i][0] < end:
        a, b = spans[i]
        if b > start:
            out.append((max(a, start) - start, min(b, end) - start))
        i += 1
    return out


def _pretty_json(text: str) -> str | None:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return None


def _pad(text: str, width: int) -> str:
    if len(text) > width:
        return text[: width - 1] + "…"
    return text.ljust(width)


def stream_lines(s: sseview.Stream, mark: Marker | None = None, held: frozenset[int] = frozenset()) -> list[Line]:
    """A stream as styled lines (see the module docstring); a channel's text wrapped
    at WRAP; the events numbered in held say they were held back."""
    chans = list(s.channels.values())
    head = f"{plural(len(s.events), 'event')}, {plural(len(chans), 'channel')}"
    head += "" if s.terminal else ", no final event"
    if s.framing != "sse":
        head += f" ({s.framing})"
    out: list[Line] = [[(HEAD if s.terminal else ERROR, head)]]
    out += [[(ERROR, f"error event: {msg}")] for msg in s.errors]
    spans: dict[str, list[tuple[int, int]]] = {}
    for c in chans:
        text = c.text
        spans[c.key] = _clean(mark(text)) if mark is not None and text else []
        out.append([])
        out.append([(HEAD, "── "), (CHAN, c.label), (HEAD, f" · {c.kind} · {len(c.pieces)} deltas ──")])
        pretty = _pretty_json(text) if c.kind == "json" else None
        if pretty is not None:
            out += wrapped(text_lines(pretty, mark))
        elif text:
            out += wrapped(_split_lines(_segments(text, spans[c.key])))
        else:
            out.append([(NOTE, "(no text)")])
    out.append([])
    out.append([(HEAD, "── events ──")])
    out += _event_rows(s, spans, held)
    return out


def _event_rows(s: sseview.Stream, spans: dict[str, list[tuple[int, int]]], held: frozenset[int]) -> list[Line]:
    if not s.events:
        return []
    nw = len(str(s.events[-1].number))
    kw = min(max(len(e.kind) for e in s.events), MAX_KIND_WIDTH)
    labels = [c.key for e in s.events for c, _ in e.deltas] + [k for e in s.events for k in e.empty]
    cw = min(max((len(x) for x in labels), default=1), MAX_CHANNEL_WIDTH)
    starts = {k: [a for a, _ in v] for k, v in spans.items()}
    out: list[Line] = [[(HEAD, f"{'#'.rjust(nw)}  {_pad('event', kw)}  {_pad('channel', cw)}  text")]]
    for e in s.events:
        lead: Line = [(NUM, str(e.number).rjust(nw)), (TEXT, "  "), (TEXT, _pad(e.kind, kw)), (TEXT, "  ")]
        if not e.deltas and e.number in held and e.empty:
            row = [*lead, (CHAN, _pad(e.empty[0], cw)), (TEXT, '  ""  '), (NOTE, HELD)]
            out.append(row + ([(NOTE, f"; {e.note}")] if e.note else []))
            continue
        if not e.deltas:
            note = e.note
            if e.doc is None and e.data is not None and e.kind not in sseview.DONE_LINES:
                note = "(not JSON) " + e.data[:MAX_ROW_CHARS].translate(_ROW_SAFE)
            out.append([*lead, (TEXT, " " * cw), (TEXT, "  "), (ERROR if e.kind == "error" else NOTE, note)])
            continue
        for i, (c, p) in enumerate(e.deltas):
            row = lead if i == 0 else [(TEXT, " " * (nw + 2 + kw + 2))]
            piece = c.text[p.start : p.start + p.length]
            shown = piece[:MAX_ROW_CHARS].translate(_ROW_SAFE)
            local = _cut(spans.get(c.key, []), starts.get(c.key, []), p.start, p.start + len(shown))
            segs = [(TEXT, '"'), *_segments(shown, local), (TEXT, '"')]
            if len(piece) > MAX_ROW_CHARS:
                segs.append((NOTE, f"… ({len(piece)} chars)"))
            out.append([*row, (CHAN, _pad(c.key, cw)), (TEXT, "  "), *segs])
        if e.note:
            out[-1].append((NOTE, f"  {e.note}"))
    return out


def held_events(client: sseview.Stream, upstream: sseview.Stream) -> frozenset[int]:
    """The client's events that name a channel with an empty text where upstream's
    event of the same number carried text in it: held back by the addon (a stream whose
    reverser keeps one event per event, as Chat's does; Anthropic's drops a held event,
    which its channel's delta count shows)."""
    if len(client.events) != len(upstream.events):
        return frozenset()
    return frozenset(
        c.number for c, u in zip(client.events, upstream.events, strict=True)
        if c.empty and not c.deltas and any(ch.key in c.empty for ch, _ in u.deltas)
    )  # fmt: skip


def body_lines(
    body: bytes, content_type: str = "", mark: Marker | None = None, other: bytes | None = None
) -> list[Line]:
    """Whatever the body is: a stream, JSON, or text (undecodable bytes replaced).
    other: upstream's side of a stream the client received (which events were held)."""
    s = sseview.parse_any(body, content_type)
    if s is not None:
        up = sseview.parse_any(other, content_type) if other is not None else None
        return stream_lines(s, mark, held_events(s, up) if up is not None else frozenset())
    pretty = sseview.render_json(body)
    if pretty is not None:
        return text_lines(pretty, mark)
    return text_lines(body.decode("utf-8", "replace"), mark)


def render_stream(body: bytes, mark: Marker | None = None) -> str:
    """An SSE body as the contentview's text."""
    return text_of(stream_lines(sseview.parse_stream(body), mark))


def render_body(body: bytes, content_type: str = "", mark: Marker | None = None) -> str:
    return text_of(body_lines(body, content_type, mark))
