"""Leak audit of recorded flows, sans I/O.

For every LLM flow: every original (a literal's original or a pattern match, exactly
what masking would replace) found in what went upstream, and every disguise or
placeholder issued for that flow found in what the client received — in JSON string
values and keys, in every SSE event, and in each stream channel's reassembled text (a
disguise streamed across two deltas is in neither event alone). Each finding names the
field where it was found; the report never quotes an original unless asked to.

Each body is read through its API's field model (base/fields.py), the table the
masker and the leak guard read: an original where the table says "masked" is a leak;
one in a field the table exempts by design (signed thinking and reasoning, signatures,
encrypted content, identifiers, binary media, the API's own words) passes
byte-identical both ways and is reported as a note naming why. So the audit calls a
leak exactly what the leak guard would have refused. A request the addon refused never
went upstream.

A shared copy (see flowfile.write_shared) holds only the provider side: there, any
original anywhere — request, response, headers, URL — and any credential header is a
leak, and the disguises in the responses are expected.

The flows come in as `Record`s (flowfile.py builds them from mitmproxy flows).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from ..apis.registry import BY_NAME
from ..base import bodies, fields
from ..errors import MaskError
from ..leakguard import WITHHELD_PATH, binary_value, first, json_place, spans
from ..rules.knowing import knowing
from ..rules.rules import LITERALS, Rules
from ..wire import percent
from ..wire.jsonspan import Rule
from ..wire.text import json_text_decoded, raw_offset
from . import sseview, wsview
from .record import plural
from .replay import rules_gone

_LOOSE = " (JSON text)"  # fields.texts: a literal of text that only looks like JSON

# The audit's verdicts as exit statuses (a CI gate reads them; cli.py adds its own for
# errors and usage).
CLEAN, LEAK, NOT_PROVEN = 0, 1, 2
_CREDENTIAL_WORDS = ("auth", "key", "token", "secret", "cookie", "session", "organization", "project")
_OPAQUE_NOTE = " (inside signed thinking/reasoning: passes byte-identical by design)"
_EVENT_FIELD = re.compile(r"event (\d+) ")  # a finding of one event's own scan (scan_body)


@dataclass
class Record:
    """One recorded flow as the audit sees it (bodies content-decoded)."""

    index: int  # 1-based position in the file
    label: str  # "POST /v1/messages" (no query: it can carry a key)
    api: str | None  # the recognised LLM API, None for other traffic
    sent: bytes | None  # the request body as it went upstream; None: it never went upstream
    received: bytes | None  # the response body as the client received it (provider side if shared)
    received_type: str = ""
    received_cut: bool = False  # the body kept is not the whole body
    sent_type: str = ""  # the request's Content-Type (how its receiver reads a body that is not JSON)
    sent_cut: bool = False  # what went upstream was not kept (a streamed body past the capture limit)
    sent_coded: bool = False  # what went upstream has a content-encoding disguise cannot undo: not read
    sent_unread: str = ""  # why a part of what went upstream was not read (bodies.Reading.unread), set by the audit
    shared: bool = False  # a shared copy (provider side only)
    headers: list[tuple[str, str, str]] = field(default_factory=list)  # (where, name, value), shared only
    extra_text: list[tuple[str, str]] = field(default_factory=list)  # (where, text), shared only
    note: str = ""
    messages: list | None = None  # a WebSocket flow's messages (wsview.Msg), in order
    fakes: frozenset[str] = frozenset()  # the fakes the flow's requests carried (disguise_fakes)
    masked_by: dict | None = None  # the rules that masked it, as its summary says (replay.fingerprint)


@dataclass
class Finding:
    flow: int
    label: str
    side: str  # "upstream" | "client" | "shared"
    field: str  # where it was found
    what: str  # the rule or disguise, never an original
    leak: bool = True
    text: str = ""  # the matched text: shown only with show_originals

    def line(self, show: bool) -> str:
        kind = "LEAK" if self.leak else "note"
        s = f"  {kind} {self.side}: {self.what} at {self.field}"
        if show and self.text:
            s += f": {self.text!r}"
        return s


@dataclass
class Report:
    records: list[Record]
    findings: list[Finding]
    skipped: int  # flows that are not LLM flows
    incomplete: list[Record]  # flows whose bodies were not kept whole
    unloaded: list[Record] = field(default_factory=list)  # flows masked by rules the audit was not given
    coded: list[Record] = field(default_factory=list)  # flows whose request body could not be decoded

    @property
    def leaks(self) -> list[Finding]:
        return [f for f in self.findings if f.leak]

    def exit_code(self) -> int:
        """LEAK on any leak, NOT_PROVEN when some flow could not be audited whole, else CLEAN."""
        if self.leaks:
            return LEAK
        return NOT_PROVEN if self.incomplete or self.unloaded or self.coded else CLEAN

    def verdict(self) -> str:
        n = len(self.records)
        flows = len({f.flow for f in self.leaks})
        if self.leaks:
            return f"LEAK: {plural(len(self.leaks), 'finding')} in {flows} of {plural(n, 'LLM flow')}"
        why = []
        if self.incomplete:
            why.append(f"{len(self.incomplete)} of {plural(n, 'LLM flow')} not kept whole")
        if self.coded:
            what = "a content-encoding" if all(r.sent_coded for r in self.coded) else "a coding"
            why.append(f"{len(self.coded)} of {plural(n, 'LLM flow')} sent upstream in {what} disguise "
                       "does not decode")  # fmt: skip
        if self.unloaded:
            why.append(f"{len(self.unloaded)} of {plural(n, 'LLM flow')} masked by rules not loaded here (name the "
                       "recording's mappings)")  # fmt: skip
        if why:
            return f"NOT PROVEN: {'; '.join(why)}, no leak in the rest"
        return f"clean: {plural(n, 'LLM flow')} audited, no leak"

    def text(self, show_originals: bool = False) -> str:
        out: list[str] = []
        by_flow: dict[int, list[Finding]] = {}
        for f in self.findings:
            by_flow.setdefault(f.flow, []).append(f)
        for r in self.records:
            fs = by_flow.get(r.index, [])
            leaks = sum(f.leak for f in fs)
            state = plural(leaks, "leak") if leaks else "ok"
            if r in self.incomplete:
                state += ", NOT KEPT WHOLE"
            if r in self.unloaded:
                state += ", MASKED BY RULES NOT LOADED"
            if r in self.coded:
                state += ", REQUEST BODY NOT DECODED (its content-encoding)" if r.sent_coded else \
                    f", REQUEST BODY NOT READ WHOLE ({r.sent_unread})"
            note = f" ({r.note})" if r.note else ""
            api = r.api or "not an API disguise transforms"
            out.append(f"flow {r.index} {r.label} [{api}{', shared copy' if r.shared else ''}]: {state}{note}")
            out.extend(f.line(show_originals) for f in fs)
        if self.skipped:
            out.append(f"{plural(self.skipped, 'other flow')} (refused by the addon, or not HTTP requests) not audited")
        out.append(self.verdict())
        return "\n".join(out)


# -- scanning ----------------------------------------------------------------------------


def walk(doc: object, rules: Rules | None = None) -> Iterator[tuple[str, str]]:
    """Every string in a JSON document, keys included: (field, text), each field named
    through rules (field_place). For a document no table describes (everything in it
    counts)."""
    stack: list[tuple[object, object, bool]] = [(doc, None, False)]  # (value, its path, a key)
    while stack:
        v, path, is_key = stack.pop()
        if isinstance(v, str):
            yield field_place(path, " (key)" if is_key else "", rules), v
        elif isinstance(v, dict):
            for k, x in reversed(list(v.items())):  # each key, then its value's strings
                stack += [(x, (path, k), False), (k, (path, k), True)]
        elif isinstance(v, list):
            stack.extend((v[i], (path, i), False) for i in range(len(v) - 1, -1, -1))


def _note(kind: str) -> str:
    """Why a finding in a field the table exempts is not a leak."""
    if kind == "opaque":
        return _OPAQUE_NOTE
    return f" ({fields.KINDS.get(kind, kind)}: untouched by design)"


_PATH_WITHHELD = "(the path withheld: it spells an original)"


def field_place(path: object, suffix: str = "", rules: Rules | None = None) -> str:
    """A finding's field: `messages[0].content` + suffix (`(body)` for the document
    itself). With rules, as leakguard.json_place shows it: a key that holds an original
    withheld, and the whole never spelling one (keys clean alone can join into one)."""
    if rules is None:
        return (fields.path_text(path) or "(body)") + suffix.replace(" (JSON text $", " (JSON text ")
    got = json_place(rules, path, suffix)
    if got == WITHHELD_PATH:
        return _PATH_WITHHELD
    head = got[1:].removeprefix(".").replace(" (JSON text $", " (JSON text ")
    head = head if head and not head.startswith(" ") else "(body)" + head
    return head if first(rules, head) is None else _PATH_WITHHELD


def table_walk(
    doc: object, table: Rule, answer: bool = False, rules: Rules | None = None
) -> Iterator[tuple[str, str, str | None, tuple | None]]:
    """Every string of a document as its API's table sees it (base/fields.py):
    (field, text, exempt kind or None, context). What the masker masks is read as it
    reads it (JSON text, text media decoded; a value with its key); what the table
    exempts comes with the kind that exempts it. answer: a response body, where media
    passes as it came (restore.restore_fn). rules: the fields are named through them
    (field_place: never an original)."""
    for f in fields.walk(doc, table, exempt=True):
        key = " (key)" if f.is_key else ""
        if answer and (f.rule.media is not None or f.rule.kind == "metadata"):  # (restore.restore_fn)
            yield field_place(f.path, key, rules), f.value, "media" if f.rule.media is not None else "metadata", None
        elif not fields.selected(f) and (answer or f.rule is not fields.NAME):  # a request NAME: as the guard
            yield field_place(f.path, key, rules), f.value, fields.kind_of(f), None
        elif f.rule is fields.NUMBER:
            yield field_place(f.path, key, rules), f.value, None, None
        else:
            try:
                got = list(fields.texts(f.value, f.rule, f.key))
            except MaskError:  # text media that does not decode: read as it is
                got = [("", f.value, None)]
            for w, t, ctx in got:
                yield field_place(f.path, key + w, rules), t, None, ctx


class Auditor:
    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.known = knowing(rules, ())  # the literals' disguises (a flow's own: _originals_of)
        ms = rules.mappings
        self.disguise_of = {lit.original: lit.disguise for lit in ms.literals}
        disguises = sorted({lit.disguise for lit in ms.literals}, key=len, reverse=True)
        self._disguise_rx = re.compile("|".join(map(re.escape, disguises))) if disguises else None
        names = [p.name for p in ms.patterns]
        self._ph_rx = (
            re.compile(r"\[(?:" + "|".join(map(re.escape, names)) + r")_[1-9][0-9]*\]") if names else None
        )
        self._fake_rx: dict[frozenset[str], re.Pattern[str]] = {}  # a flow's fakes, as one regex

    # originals: exactly what masking would replace, read as the leak guard reads it: what
    # the flow's disguises make is none (rules/knowing.py: a fake looks like an original of
    # its kind; a placeholder's digit or a literal's disguise may complete a rule's match)
    def originals(
        self, text: str, context: tuple | None = None, rules: Rules | None = None
    ) -> list[tuple[str, int, int]]:
        out = []
        for label, a, b in spans(rules if rules is not None else self.known, text, context):
            if label == LITERALS:
                what = f"literal (disguise {self.disguise_of.get(text[a:b], '?')!r})"
            else:
                what = f"{label} match"
            out.append((what, a, b))
        return out

    def issued(self, sent: bytes | None, fakes: frozenset[str] = frozenset()) -> set[str]:
        """The placeholders a request carried upstream, and the fakes its summary lists:
        issued for this flow."""
        if not sent or self._ph_rx is None:
            return set(fakes)
        return set(self._ph_rx.findall(sent.decode("utf-8", "replace"))) | fakes

    def disguises(self, text: str, issued: set[str], context: tuple | None = None) -> list[tuple[str, int, int]]:
        out = []
        if self._disguise_rx is not None:
            out += [(f"disguise {m.group()!r}", m.start(), m.end()) for m in self._disguise_rx.finditer(text)]
        if self._ph_rx is not None and issued:
            out += [(f"placeholder {m.group()}", m.start(), m.end())
                    for m in self._ph_rx.finditer(text) if m.group() in issued]  # fmt: skip
        fakes = frozenset(x for x in issued if not x.startswith("["))
        if fakes:
            rx = self._fake_rx.get(fakes)
            if rx is None:
                rx = self._fake_rx[fakes] = re.compile("|".join(map(re.escape, sorted(fakes, key=len, reverse=True))))
            out += [(f"fake ({len(m.group())} characters)", m.start(), m.end()) for m in rx.finditer(text)]
        return sorted(out, key=lambda t: t[1])

    # -- per side ------------------------------------------------------------------------

    def scan_body(
        self, body: bytes, find, side: str, r: Record, ctype: str = "", table: Rule | None = None,
        events: Rule | None = None, sent_type: str | None = None,
    ) -> list[Finding]:  # fmt: skip
        """find(text, context) -> [(what, a, b)] over every string of a JSON body (read
        through its API's table: a finding where the table exempts the field is a note),
        every event of an SSE body (each through the API's event table) and every
        channel's text, or the text of anything else — a request's (sent_type: its
        Content-Type) read as the leak guard reads it, as its receiver does
        (base/bodies.py: form fields, multipart parts, charsets; percent-decoded)."""
        out: list[Finding] = []

        # Text that only looks like JSON is read as written and then literal by literal
        # (fields.texts): what the literal reading finds again is said once.
        written: Counter[tuple[str, str, str]] = Counter()

        def add(fld: str, text: str, kind: str | None, base: str = "", ctx: tuple | None = None) -> None:
            loose = fld.endswith(_LOOSE)
            for what, a, b in find(text, ctx):
                key = (base + fld.removesuffix(_LOOSE), what, text[a:b])
                if loose and written[key] > 0:
                    written[key] -= 1
                    continue
                if not loose:
                    written[key] += 1
                why = _note(kind) if kind is not None else ""
                out.append(Finding(r.index, r.label, side, f"{base}{fld} [{a}:{b}]{why}", what, kind is None,
                                   text[a:b]))  # fmt: skip

        answer = events is not None  # a response body: read with the response tables

        def doc_findings(doc: object, rule: Rule | None, base: str = "") -> None:
            if rule is None:
                for fld, text in walk(doc, self.rules):
                    add(fld, text, None, base)
                return
            for fld, text, kind, ctx in table_walk(doc, rule, answer, self.rules):
                add(fld, text, kind, base, ctx)

        stream = sseview.parse_any(body, ctype)
        if stream is not None:
            for e in stream.events:
                if e.doc is None:
                    if e.data:
                        add("data", e.data, None, f"event {e.number} ")
                    continue
                doc_findings(e.doc, events if events is not None else table, f"event {e.number} ")
            for c in stream.channels.values():
                self._split(c, find, side, r, out)
            return out
        try:
            doc = fields.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            if sent_type is None:
                add("body", body.decode("utf-8", "replace"), None)
                return out
            for rd in bodies.readings(body, sent_type):  # as leakguard.scan_body reads it
                if rd.unread:  # (a gRPC message in a coding not read here: the flow is not proven)
                    r.sent_unread = r.sent_unread or rd.unread
                    continue
                where = rd.where if first(self.rules, rd.where) is None else _PATH_WITHHELD
                if rd.doc is not None:
                    doc_findings(rd.doc, None, f"{where} ")
                    continue
                add(where, rd.text, None)
                if percent.coded(rd.text):
                    add(f"{where} (percent-decoded)", percent.decoded(rd.text), None)
            return out
        if isinstance(doc, list) and events is not None and table is not None:
            # a streamed JSON array (Gemini) that arrived whole: each element an event
            for i, d in enumerate(doc):
                doc_findings(d, events, f"element {i + 1} ")
            return out
        doc_findings(doc, table)
        return out

    @staticmethod
    def _split(c: sseview.Channel, find, side: str, r: Record, out: list[Finding]) -> None:
        """Matches in a channel's text that span two or more events (the events
        themselves were scanned one by one). A channel of JSON text (a tool's arguments)
        is searched in decoded space, as the restorer matches it (wire/text.py
        json_text_decoded: `Zenith\\u0020Labs` is `Zenith Labs`), its offsets mapped back
        to the events' text. There a match inside one event is reported too unless
        that event's own scan found it: an event's piece of JSON text is not always JSON
        (`Zenith\\u0020Labs"}`), and read as written its escapes hide the match."""
        starts = [p.start for p in c.pieces]
        text = c.text
        seen: Counter[tuple[int, str]] = Counter()
        if c.kind == "json":
            dec, at, shift, _ = json_text_decoded(text, 0, True)
            found = [(what, raw_offset(at, shift, a), raw_offset(at, shift, b)) for what, a, b in find(dec, None)]
            for f in out:  # what each event's own scan found
                m = _EVENT_FIELD.match(f.field)
                if m is not None:
                    seen[(int(m.group(1)), f.what)] += 1
        else:
            found = find(text, None)
        for what, a, b in found:
            i, j = bisect_right(starts, a) - 1, bisect_right(starts, b - 1) - 1
            if i == j:
                ev = c.pieces[i].event
                if c.kind != "json" or seen[(ev, what)] > 0:
                    seen[(ev, what)] -= 1
                    continue
                out.append(Finding(r.index, r.label, side, f"event {ev} channel {c.label!r} [{a}:{b}] (JSON text, "
                                   "decoded)", what, True, text[a:b]))  # fmt: skip
                continue
            signed = c.kind == "thinking"
            why = " (inside signed thinking/reasoning: passes byte-identical by design)" if signed else ""
            fld = (f"channel {c.label!r} [{a}:{b}], split across events "
                   f"{c.pieces[i].event}-{c.pieces[j].event}{why}")  # fmt: skip
            out.append(Finding(r.index, r.label, side, fld, what, not signed, text[a:b]))

    def audit_messages(self, r: Record) -> list[Finding]:
        """A realtime WebSocket flow: every message that went upstream for originals,
        every message the client received (and each channel's reassembled text) for the
        disguises and placeholders the connection issued."""
        msgs = r.messages or []
        out: list[Finding] = []
        issued: set[str] = set(r.fakes)
        mine = self._originals_of(r)
        for n, m in enumerate(msgs, 1):
            if wsview.sent_upstream(m):
                issued |= self.issued(m.content, r.fakes)
                for f in self.scan_body(m.content, mine, "upstream", r):
                    f.field = f"message {n} {f.field}"
                    out.append(f)
        for n, m in enumerate(msgs, 1):
            if wsview.received(m):
                for f in self.scan_body(m.content, lambda t, ctx=None: self.disguises(t, issued), "client", r):
                    f.field = f"message {n} {f.field}"
                    out.append(f)
        for c in wsview.parse(msgs).channels.values():
            self._split(c, lambda t, ctx=None: self.disguises(t, issued), "client", r, out)
        return out

    def _originals_of(self, r: Record) -> Callable[..., list[tuple[str, int, int]]]:
        """originals() for r's texts, knowing the placeholders and fakes r issued."""
        sent = [m.content for m in r.messages or [] if wsview.sent_upstream(m)] + [r.sent]
        issued = set(r.fakes).union(*(self.issued(b) for b in sent))
        if not issued:
            return self.originals
        rules = knowing(self.rules, issued)
        return lambda t, ctx=None: self.originals(t, ctx, rules)

    def audit_record(self, r: Record) -> list[Finding]:
        out: list[Finding] = []
        mine = self._originals_of(r)
        if r.messages is not None and not r.shared:
            return self.audit_messages(r)
        api = BY_NAME.get(r.api) if r.api else None
        req = api.request_rule if api is not None and api.request_body is None else None
        resp, events = (api.response_rule, api.event_rule) if api is not None else (None, None)
        if r.shared:
            if r.sent:
                out += self.scan_body(r.sent, mine, "shared", r, table=req, sent_type=r.sent_type)
            if r.received:
                out += [
                    Finding(f.flow, f.label, "shared", f"response {f.field}", f.what, f.leak, f.text)
                    for f in self.scan_body(r.received, mine, "shared", r, r.received_type, resp, events)
                ]
            for where, name, value in r.headers:
                if any(w in name.lower() for w in _CREDENTIAL_WORDS):
                    out.append(Finding(r.index, r.label, "shared", f"{where} header {name!r}", "credential header"))
                for how, text in _header_texts(name, value):
                    for what, a, b in mine(text):
                        out.append(Finding(r.index, r.label, "shared", f"{where} header {name!r}{how} [{a}:{b}]", what,
                                           True, text[a:b]))  # fmt: skip
            for where, text in r.extra_text:
                for what, a, b in mine(text):
                    out.append(Finding(r.index, r.label, "shared", f"{where} [{a}:{b}]", what, True, text[a:b]))
            return out
        if r.sent is not None:
            out += self.scan_body(r.sent, mine, "upstream", r, table=req, sent_type=r.sent_type)
            for where, name, value in r.headers:  # the URL and the headers, as the leak guard reads them
                for how, text in _header_texts(name, value):
                    for what, a, b in mine(text):
                        out.append(Finding(r.index, r.label, "upstream", f"{where} header {name!r}{how} [{a}:{b}]",
                                           what, True, text[a:b]))  # fmt: skip
            for where, text in r.extra_text:
                for what, a, b in mine(text):
                    out.append(Finding(r.index, r.label, "upstream", f"{where} [{a}:{b}]", what, True, text[a:b]))
        if r.received:
            issued = self.issued(r.sent, r.fakes)
            out += self.scan_body(
                r.received, lambda t, ctx: self.disguises(t, issued), "client", r, r.received_type, resp, events
            )
        return out


def _header_texts(name: str, value: str) -> Iterator[tuple[str, str]]:
    """A header's value as the leak guard reads it: as it is, and a gRPC binary header's
    decoded (leakguard.binary_value)."""
    yield "", value
    decoded = binary_value(name, value)
    if decoded:
        yield " (base64-decoded)", decoded


def audit(records: Iterable[Record], rules: Rules, progress: Callable[[int], None] | None = None) -> Report:
    """Audit every LLM record (api set) and every other record that went upstream,
    whatever its endpoint (an endpoint disguise does not transform, forwarded under
    disguise_allow_unknown or because it looked clean: what it carried is read whole);
    the rest (refused, not HTTP) are counted as skipped. progress, if given, is called
    with the number of records done after each one."""
    a = Auditor(rules)
    llm: list[Record] = []
    skipped = 0
    findings: list[Finding] = []
    incomplete: list[Record] = []
    unloaded: list[Record] = []
    coded: list[Record] = []
    for done, r in enumerate(records, 1):
        if progress is not None:
            progress(done)
        if r.api is None and (r.sent is None or r.messages is not None):
            skipped += 1
            continue
        llm.append(r)
        findings += a.audit_record(r)
        if r.received_cut or r.sent_cut:
            incomplete.append(r)
        if r.sent_coded or r.sent_unread:  # read as it came: what its receiver decodes was not searched
            coded.append(r)
        gone = rules_gone(r.masked_by, rules) if r.masked_by is not None and not r.shared else None
        if gone is not None:  # what those rules' disguises did on the client's side is not seen
            r.note = f"{r.note}; {gone}" if r.note else gone
            unloaded.append(r)
    return Report(llm, findings, skipped, incomplete, unloaded, coded)
