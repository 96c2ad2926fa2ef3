"""Request masking: a JSON body through its API's field rules (sans I/O)."""

from __future__ import annotations

import bisect
import functools
import json
from array import array
from collections.abc import Callable
from typing import Any, Protocol

from ..errors import MaskError
from ..rules import rawscan, remask, settle
from ..rules.found import NOTHING, Memo, digest_of
from ..rules.rules import Rules, Session
from ..wire import jsonspan, percent, spanwalk
from ..wire.text import Columns, splice
from ..wire.tokenmap import Token as _Token
from ..wire.tokenmap import splice as _splice
from . import copies
from .document import repeated
from .fields import As, Dup, key_context, loads, plain, read
from .jsonanswer import answers_json
from .offsets import documents, masking_edits
from .present import Held
from .prompt import numbers_key, prompt_order
from .received import Received, as_received


class _Api(Protocol):
    """What masking needs of an API (registry.Api): its table, or its body model."""

    @property
    def request_rule(self) -> jsonspan.Rule | None: ...

    @property
    def request_body(self) -> Any: ...


_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]

# Maskings of one body with the fakes that clash reserved before it is refused (a client would type each next too).
_FAKE_ROUNDS = 4


def mask_request_body(
    raw: bytes | Received, api: _Api, rules: Rules, content_type: str = "", scanned: dict | None = None,
    parsed: list | None = None, read: Callable[[], None] | None = None, disguises: Rules | None = None,
    start: Session | None = None, note: Any = None,
) -> tuple[bytes, Session]:
    """Mask a request body of api: one JSON document read with its request_rule, or a
    body with a model of its own (api.request_body: the batch upload). Raises MaskError,
    or NotTransformed for a body the API's route does not transform after all.
    scanned, parsed, read, disguises, start, note: see mask_body."""
    if api.request_body is not None:
        if start is not None and start.placeholders:
            raise MaskError("a body with a model of its own cannot continue its headers' placeholders")
        return api.request_body.mask(as_received(raw), content_type, rules)
    return mask_body(raw, api.request_rule, rules, scanned, parsed, read, disguises, start, note)


def mask_body(
    raw: bytes | Received, root: jsonspan.Rule | None, rules: Rules, scanned: dict | None = None,
    parsed: list | None = None, read: Callable[[], None] | None = None, disguises: Rules | None = None,
    start: Session | None = None, note: Any = None,
) -> tuple[bytes, Session]:
    """Mask a request body. Returns the new body (raw itself if nothing changed) and the
    session holding this request's placeholders, numbered around any placeholder string
    the request already holds. root None: a request whose body the provider does not
    read as model input (a retrieval); it goes out as it came. Raises MaskError.
    scanned: see mask_doc. parsed: a list that receives (new body, its document as
    fields.loads reads it) for the leak guard (leakguard.readings), so that the masked
    body is not parsed a second time; nothing when that document cannot be shown to be
    exactly what parsing the new body gives (masked_doc). read: called once masking
    changed something, before the masked text is made, with scanned as masking left it
    (the disguise warning's pass over the texts the client sent: pipeline); the texts
    masking changed are then taken out of scanned (forget_changed: the guard scans them
    again, as it does a text not in it). They are let go in the document too (masked_doc
    puts the new ones in), so that the old text is not held beside the new one (a 200 MB
    string: once more the body at each step after). raw a Received: its bytes are let
    go once decoded, made again only when nothing changed (the body returned).
    disguises: the rule set of the warning pass (read), whose literals a scan of the
    body's raw bytes looks for too when it is made (rules/rawscan.py, with scanned a
    Memo: the guard and the warning pass learn from it what it left out). start: the session
    of the request's headers that left before its body (mitm/streamed.py), which the
    body's masking continues (Session.after). note: told where the body's conversation's
    elements begin and what masking made of it (turns.Note: a next turn cut from it)."""
    if root is None:
        return as_received(raw), (Session() if start is None else start.after())  # type: ignore[return-value]
    clashes: list = []
    s, doc = _parse(raw, clashes)
    if clashes:
        raise repeated(doc, clashes, "body")
    if not isinstance(doc, dict):
        raise MaskError("body is not a JSON object")
    keyed, hot = numbers_key(doc, root, rules.numbers_key), None  # (a request continuing stored state: base/prompt.py)
    if type(scanned) is Memo:  # (a Received's bytes are let go: made again only if the pass is made)
        hot = rawscan.hot(raw if isinstance(raw, bytes) else None, s, rules, disguises)
    reserved: frozenset[str] = frozenset()
    held = Held()  # the placeholders and fakes the client's texts hold (base/present.py)
    trace: dict | None = {} if parsed is not None else None
    marks = note.marks(s, doc, root) if note is not None else None
    try:
        for _ in range(_FAKE_ROUNDS):
            session = Session(reserved, keyed) if start is None else start.after(reserved, keyed)
            edits, changed = mask_doc(
                s, doc, root, rules, session, scanned=scanned, trace=trace, spliced=False, hot=hot, held=held,
                marks=marks,
            )
            if not held.clash:
                break
            # a fake that is text the client sent: its copy in the answer would come back
            # as the original; masked again with that fake reserved
            reserved = reserved | held.clash
        else:
            raise MaskError("the request holds the fakes of its own originals as text, again and again")

        def again(n: int) -> Session:  # the n-th masking again: from the start, the session anew
            if type(scanned) is Memo:
                scanned.raw = scanned.read = None
            return Session(reserved, keyed, n) if start is None else start.after(reserved, keyed, n)

        as_sent = raw if type(raw) is bytes else None  # s's bytes (s decoded them): not encoded again
        session, edits, changed = with_copies(
            s, doc, root, rules, session, edits, changed, again, as_sent, scanned=scanned, trace=trace, held=held,
            marks=marks,
        )
        session.documents = documents(s, doc, root, session.cited) if session.cited else {}  # by index
        session.json_out = answers_json(doc, root)
    except (KeyError, IndexError, TypeError) as e:
        # The raw walk and json.loads disagree only where an object repeats a key with
        # values of different shapes: which one the provider reads is not ours to guess.
        raise MaskError("body repeats a key with values of different shapes") from e
    except RecursionError as e:
        raise MaskError("a string holds JSON nested too deeply to be read") from e
    if note is not None:
        note.masked(s, edits, session, held)
    shared = None
    if changed:
        if read is not None:
            read()
            if scanned is not None:
                forget_changed(scanned)
        if trace is not None:
            _drop_old(trace)
        else:
            del doc
            doc = None
    new = _splice(s, edits)  # type: ignore[arg-type]
    del edits
    if parsed is not None:
        shared = doc if not changed else masked_doc(s, new, doc, trace)  # type: ignore[arg-type]
    del s, doc, trace  # before the masked text is encoded (a 200 MB body: each a copy)
    if changed and isinstance(raw, Received):
        raw.release()  # its text (s) let go too
    body = new.encode("utf-8") if changed else as_received(raw)
    del new
    assert body is not None  # released only when changed
    if shared is not None:
        parsed.append((body, shared))  # type: ignore[union-attr]
    return body, session


def forget_changed(scanned: dict) -> None:
    """The texts masking changed (None in scanned) taken out of it: the guard scans such
    a text again, as it does one not in it, so the old text is not kept alive through
    the guard (a 200 MB string: once more the body); and the texts a raw scan left the
    warning pass (Memo.read) and the digests of the changed ones (Memo.spent), which it
    has read by now."""
    if type(scanned) is Memo:
        scanned.read = None
        scanned.spent = {}
    for text in [text for text, seen in scanned.items() if seen is None]:
        del scanned[text]


def _drop_old(trace: dict) -> None:
    """The old values of the strings masking changed let go, in the document (masked_doc
    puts each new one in) and in the walk's list, before the masked text is made."""
    toks = trace["toks"]
    for t, _ in trace["ranges"]:
        owner = toks.owners[t]
        if toks.rules[t] is not jsonspan.KEY and owner is not None and type(owner) is not Dup:
            owner[toks.slots[t]] = None
        toks.vals[t] = None


def _parse(raw: bytes | Received, clashes: list | None = None) -> tuple[str, object]:
    """The body decoded and parsed once as the leak guard reads one (fields.loads; clashes:
    document.loads), a Received's bytes let go once decoded. Raises MaskError."""
    try:
        s = raw.text() if isinstance(raw, Received) else raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MaskError(f"body is not UTF-8 (byte offset {e.start})") from e
    try:
        return s, loads(s, clashes)
    except ValueError as e:
        raise MaskError(f"body is not valid JSON: {e}") from e
    except RecursionError as e:
        raise MaskError("body is nested too deeply to be read") from e


def masked_doc(s: str, out: str, doc: object, trace: dict) -> object | None:
    """doc (fields.loads(s)) turned into fields.loads(out), out being the masked text of
    mask_doc's last call (trace), without parsing out again: each string token masking
    changed is read back from out itself (json's own string scanner) at the place the
    edits put it, and every byte of out between those tokens is checked to be s's. So
    the result is exactly what parsing out gives, whatever the masker did; None where
    that cannot be shown cheaply (the text differs elsewhere, a token does not read back
    as one string, a repeated key, a key renamed onto another, two tokens of one place: a
    key repeated with the same container twice, whose copies the walk reads against the
    one the parse keeps, the first copies' objects left as they came), and the guard
    parses. A token whose text is exactly one the scanner read before where it masked
    the same text (remask.Masking.read) is taken as the string read there: one str
    from one turn to the next (the leak guard's look-up of it keeps its hash). Such a
    reading is kept only where the rule set remembers the string as one it found
    nothing in (Found.holds_clean: masking's second look at it, rules/settle.py): a
    masked text that still holds an original is never kept."""
    toks, ranges, met, found = trace["toks"], trace["ranges"], trace.get("met", {}), trace.get("found")
    where = toks.spans
    sets: list[tuple[Any, str | int, str, bool]] = []
    places: dict[int, set[str | int]] = {}  # each owner's (and kind's) keys changed (no object a token: the collector)
    ps = po = delta = 0
    for t, grow in ranges:
        i, end = where[2 * t], where[2 * t + 1]
        ni, nend = i + delta, end + delta + grow
        if out[po:ni] != s[ps:i] or out[ni : ni + 1] != '"':
            return None
        m = met.get(t)
        if (
            m is not None and (was := m.read) is not None and len(was[0]) == nend - ni - 2
            and out.startswith(was[0], ni + 1) and out[nend - 1] == '"'
        ):  # fmt: skip
            v, stop = was[1], nend  # the very text json's scanner read as was[1] (remask.Masking.read)
        else:
            try:
                v, stop = _scanstring(out, ni + 1)
            except ValueError:
                return None
            if m is not None and stop == nend and m.read is None and found is not None and found.holds_clean(v):
                found.masked.keep_read(m, out[ni + 1 : nend - 1], v)  # (a text the rules find nothing in)
        owner, key, is_key = toks.owners[t], toks.slots[t], toks.rules[t] is jsonspan.KEY
        if stop != nend or owner is None or type(owner) is Dup:
            return None
        keys = places.get(2 * id(owner) + is_key)
        if keys is None:
            places[2 * id(owner) + is_key] = {key}
        elif key in keys:
            return None
        else:
            keys.add(key)
        sets.append((owner, key, v, is_key))
        ps, po, delta = end, nend, delta + grow
    if out[po:] != s[ps:]:
        return None
    renamed: dict[int, tuple[dict, dict[str, str]]] = {}
    for owner, key, v, is_key in sets:
        if is_key:
            renamed.setdefault(id(owner), (owner, {}))[1][key] = v  # type: ignore[index]
        else:
            owner[key] = v
    for owner, names in renamed.values():
        items = [(names.get(k, k), x) for k, x in owner.items()]
        if len({k for k, _ in items}) != len(items):
            return None  # two keys now the same: a repeated key, which loads keeps apart
        owner.clear()
        owner.update(items)
    return doc


def with_copies(
    s: str, doc: object, root: jsonspan.Rule, rules: Rules, session: Session, edits: list, changed: int,
    again: Callable[[int], Session], raw: bytes | None = None, **kw: Any,
) -> tuple[Session, list, int]:
    """(session, edits, changed) of the JSON text s, masked (mask_doc, spliced=False: edits,
    changed in session): where the masked text still spells an original a rule found by
    its context (here, where its context is not), masked again, every copy too, while it
    spells one not masked so yet (base/copies.py: COPY_ROUNDS at most, then MaskError).
    again(n): the session the n-th masking again starts from (the body's: anew, after the
    headers'; a realtime event's: the connection's as it stood before the event). kw:
    mask_doc's. raw: s's UTF-8 bytes, where the caller holds them."""
    known = copies.Originals()
    while (more := copies.more(s, edits, session, known, raw)) is not None:
        known = more
        session = again(session.copied + 1)
        edits, changed = mask_doc(s, doc, root, rules, session, spliced=False, known=known, **kw)
    return session, edits, changed


def mask_doc(
    s: str, doc: object, root: jsonspan.Rule, rules: Rules, session: Session, every: bool = False,
    scanned: dict | None = None, trace: dict | None = None, spliced: bool = True, hot: array[int] | None = None,
    held: Held | None = None, known: dict[str, str] | None = None, marks: Any = None,
) -> tuple[Any, int]:
    """The JSON text s (parsed: doc) masked as root's rules select; (text, tokens changed).

    The body is the unit. A first walk lists every string the rules select and what
    masking it would read (reads(): the string, with its key around it in user-defined
    JSON, and for JSON text every key and value inside it); nothing is matched yet.
    Then all of that is scanned at once (Rules.prescan): one Aho–Corasick pass for the
    literals over all of it, the patterns' prefilter over each piece. Only the strings
    in which a candidate was found (and those that cannot be scanned: a lone surrogate)
    are masked, exactly as mask_fn masks one string, in order (placeholders number by
    first appearance), and what the scan found is not looked for again; a document an
    answer may cite by offsets (a CITED_TEXT string) gets its edits noted in session.cited
    (base/offsets.py). every: mask every string without the scan (the reference the scan
    is tested against). scanned: a dict that receives what the scan found per text (the
    memo of Rules.prescan), for the leak guard's look at the masked body
    (leakguard.scan_request): the texts masking left as they were need no second scan.
    trace: a dict that receives where each selected string is (in s and in doc) and the
    edits per string changed (masked_doc reads them). spliced False: the edits instead of
    the text, sorted and disjoint ((start, end, replacement) in s). hot: where a scan of
    the body's raw bytes marked s (rules/rawscan.py): the strings it shows clean are left
    out of the walk (spanwalk.py_collect) and, with scanned a Memo, listed in its `raw`
    for the guard, the texts the walk read in its `read` for the warning pass. held: told
    the texts the walk read before anything is masked, and when all is (present.Held: the
    placeholders and fakes the request holds as the client's own, read where masking
    reads, and only there). known: originals (-> the rule that found them) whose every
    copy is masked too, wherever a rule finds it or not (base/copies.py). marks: told of
    each string as it is masked, in order (turns.Marks: the session where an element of
    the conversation begins)."""
    if rules.is_empty:
        if trace is not None:
            trace.update(toks=jsonspan.Tokens([], [], [], [], [], []), ranges=[])
        return (s, 0) if spliced else ([], 0)
    pieces: list[str] = []
    owner: array[int] = array("q")  # each piece's string (machine integers: a million pieces)
    seen: list[str] | None = [] if hot is not None and not every else None
    noted = held.noting(reads) if held is not None else reads
    toks = spanwalk.collect(s, doc, root, pieces, noted, plain, key_context, owner, trace is not None, hot, seen)
    if held is not None:
        held.read(s, pieces, seen, rules, session, functools.partial(_echo, toks.rules, owner))
    vals, rules_of, keys, where = toks.vals, toks.rules, toks.keys, toks.spans
    marked_t: list[int]
    memo: dict | None = None
    if every:
        marked_t = list(range(len(vals)))
    else:
        # every text read goes to scanned: the memo holds each piece prescan did not
        # mark; a marked one is listed below, with the strings masked (None: scan it
        # again). Made there when it is empty (a million texts: not copied).
        marked, memo = rules.prescan(pieces, into=scanned if scanned is not None and not scanned else None)
        copied = {owner[k] for k in copies.holding(pieces, known)} if known else set()
        marked_t = sorted({owner[k] for k in marked} | copied)
        if scanned is not None and memo is not scanned:
            scanned.update(memo)
        if seen is not None and type(scanned) is Memo:
            scanned.raw, scanned.read = seen, pieces  # the texts left out; those the walk read
        del seen
    fn = mask_fn(rules, session, memo, known)
    spent = scanned.spent if type(scanned) is Memo else None
    # masked in the provider's prompt order, where the body's is another (placeholders
    # number by first appearance: base/prompt.py), then spliced in the body's
    first = prompt_order(s, doc, root, marked_t, where, marks.members if marks is not None else None)
    if marks is not None:
        fn = marks.watching(fn, marked_t if first is None else first, where, session)
    done = {t: fn(vals[t], rules_of[t], keys[t]) for t in first} if first is not None else None
    edits: list[tuple[int, int, str]] = []
    ranges: list[tuple[int, int]] = []  # per token changed: (token, how much longer its token grew)
    met: dict[int, remask.Masking] = {}  # a token's text's masking remembered (rules/remask.py)
    for t in marked_t:
        v = vals[t]
        n = len(edits)
        new = done.pop(t) if done is not None else fn(v, rules_of[t], keys[t])
        if rules_of[t].cited:  # a document an answer may cite by offsets (base/offsets.py)
            session.cited.append((where[2 * t], masking_edits(v, new)))
        # what masking made of v before, where v is a text of the scan (its digest, read
        # before the entry is spent below): the edits it made in a token like this one
        again = None
        if memo is not None and type(new) is jsonspan.Spans and new and (d := digest_of(memo.get(v))) is not None:
            again = rules.found.masked.get(d)
            if again is not None and trace is not None:
                met[t] = again  # (masked_doc: the masked token read before)
        if memo is not None:
            # what the scan found in this string's texts is spent (a 200 MB string's
            # matches); their texts stay listed as read (scanned's keys), for a full
            # scan if met again; in a string left as it was, a text in which find()
            # found nothing stays NOTHING (the guard reads it again: Rules.find)
            kept = new is v or (isinstance(new, (jsonspan.Spans, Columns)) and not new)
            for k in range(bisect.bisect_left(owner, t), bisect.bisect_right(owner, t)):
                p = pieces[k]
                if not kept or memo.get(p) is not NOTHING:
                    if spent is not None and (d := digest_of(memo.get(p))) is not None:
                        spent[p] = d  # the warning pass reads it (Memo.spent)
                    memo[p] = None
                if scanned is not None and (not kept or scanned.get(p) is not NOTHING):
                    scanned[p] = None
        i, end = where[2 * t], where[2 * t + 1]
        if isinstance(new, Columns) and len(new) > jsonspan._SPLICE_MAX_ESCAPES and s.find("\\", i + 1, end - 1) < 0:
            # a big text's many edits (what jsonspan.apply would splice into one new token
            # text now): kept as they are and spliced into the body's text at its end,
            # once the old text is let go (mask_body: memory)
            edits.append((i + 1, end - 1, _Token(s, i + 1, end - 1, new, v.isascii())))  # type: ignore[arg-type] # a Token: read by _splice alone
        elif again is not None and (got := remask.raw_edits(again, s, i, end, v, new)) is not None:
            edits.extend(got)  # what jsonspan.apply makes, made once for this token (rules/remask.py)
        else:
            jsonspan.apply(s, i, end, v, new, edits)
        del new
        if len(edits) > n:
            ranges.append((t, sum(len(rep) - (e1 - e0) for e0, e1, rep in edits[n:])))
    if marks is not None:
        marks.done(session)
    if held is not None:
        held.done(session)
    del pieces, owner
    if memo is not None and memo is not scanned:
        memo.clear()  # fn's closure holds it in a cycle (fn calls fn): its texts not kept till a collection
    if trace is not None:
        trace.update(toks=toks, ranges=ranges, met=met, found=rules.found)
    if not spliced:
        return edits, len(edits)
    out = _splice(s, edits)
    changed = len(edits)
    del edits
    return out, changed


def _echo(rules_of: list[jsonspan.Rule], owner: array[int], k: int) -> bool:
    """Is the k-th piece of the walk an answer's text sent back as it came (fields.ECHO)?"""
    return rules_of[owner[k]].echo


def reads(v: str, rule: jsonspan.Rule, key: str | None, out: list[str]) -> None:
    """Append to out every text mask_fn(v, rule, key) would match rules against (the
    string as fields.read reads it): a candidate for any rule in v lies in one of them."""
    if rule is not jsonspan.KEY and not plain(v, rule):
        r = read(v, rule)
        if r.how is As.BINARY:
            return
        if r.how is As.MEDIA:
            assert r.again is not None
            reads(r.text, r.again, None, out)
            return
        if r.how is As.LOOSE:
            out.append(v)  # read as written too (mask_fn)
            jsonspan.transform_loose(v, lambda piece: _note_text(out, piece))
            return
        if r.how is As.JSON:
            spanwalk.collect(v, r.doc, jsonspan.USER, out, reads, plain, key_context)
            return
        if r.how is As.PERCENT:
            out.append(percent.decoded(v))  # decoded; as written below (mask_fn)
    if key is not None and rule is not jsonspan.KEY:
        # mask_spans with context; it reads v alone only when a literal it found there
        # reaches into the context, and then this piece is marked already
        before, after = key_context(key)
        out.append(before + v + after)
    else:
        out.append(v)


def _note_text(out: list[str], piece: str) -> str:
    out.append(piece)
    return piece


def mask_fn(rules: Rules, session: Session, memo: dict | None = None, known: dict[str, str] | None = None):  # noqa: ANN201
    """Masks one string the way the model will read it: fn(v, rule, key) for a string
    the walk selected, read with its key (in user-defined JSON) or None.

    Wherever a string holds JSON text (tool arguments, and any value that is a JSON
    object or array: a tool_result holding a JSON document, say), the provider's model
    reads that JSON decoded, so an original spelled with escapes (`C:\\\\Users`,
    `M\\u00fcller`) must be found decoded: the text is masked as JSON, keys and values,
    every other byte of it kept. JSON text that does not parse (arguments cut short, or
    text that only begins like JSON) is masked as written, then literal by literal,
    decoded. A string stored in a codec (`rule.media`: base64
    or a data: URL of text) is decoded, masked (as JSON when its type is JSON) and
    encoded again. Anything else is masked as text. How a string is read is
    fields.read's one answer; fields.texts() reports the same reading to the leak guard
    and the audit, reads() to the body's one scan (tests/base/test_field_parity.py).
    """

    def text(v: str) -> str:
        if known:
            return splice(v, list(spans(v)))
        return rules.mask(v, session, None, memo)

    def spans(v: str, context: tuple[str, str] | None = None) -> jsonspan.Spans | Columns:
        e = rules.mask_spans(v, session, context, memo)
        if known:  # every copy of these too (base/copies.py), and what masking them revealed
            more = copies.add(v, list(e), known, session, rules.faker)
            if len(more) != len(e) and len(v) < settle.LONGEST:
                more = settle.settle(rules, v, more, session, context, memo)
            e = more
        return e if isinstance(e, Columns) else jsonspan.Spans(e)  # a big text's: kept in columns

    def fn(v: str, rule: jsonspan.Rule, k: str | None) -> str | jsonspan.Spans | Columns:
        if rule is jsonspan.KEY:
            return spans(v)
        r = None if plain(v, rule) else read(v, rule)
        if r is None or r.how is As.TEXT:
            return spans(v) if k is None else spans(v, key_context(k))
        if r.how is As.BINARY:
            return v  # binary media: passes as it came
        if r.how is As.MEDIA:
            assert r.codec is not None and r.again is not None
            new = as_text(r.text, fn(r.text, r.again, None))
            return v if new == r.text else r.codec.encode(new, r.raw)
        if r.how is As.LOOSE:
            # Text that only looks like JSON (`[C:\\Users\\a "b"`, arguments cut
            # short) is read as it is written, and its literals decoded: masked both
            # ways, as written first (an original may hold a quote, which the
            # literal-by-literal reading cuts at).
            return jsonspan.transform_loose(text(v), text)
        if r.how is As.PERCENT:
            # A URL the provider fetches, percent-encoded: masked as written (as TEXT,
            # with its key), then with its URLs decoded, each edit put back where its
            # characters were written; either way a replacement in a URL is escaped
            # where it would end it, so that the URL still reads as one (wire/percent.py).
            written = percent.put(v, list(spans(v) if k is None else spans(v, key_context(k))))
            return percent.transform(written, lambda t: list(spans(t)))
        # As.JSON. In user-defined JSON (tool input, JSON text in a string) a member's
        # string value is read with its key: `{"aws_secret_access_key": "..."}` must
        # meet the rules anchored on the key (spanwalk.Keyed: as collect and the
        # guard read it).
        where: list[tuple[int, int]] = []
        at: list[tuple[object, str | int, bool]] = []
        keyed = spanwalk.Keyed()

        def inner_fn(x: str, xr: jsonspan.Rule) -> str | jsonspan.Spans | Columns:
            return fn(x, xr, keyed(x, xr, at[-1]))  # (the walk listed x's place)

        return jsonspan.Spans(spanwalk.walk(v, r.doc, jsonspan.USER, inner_fn, where=where, at=at))  # type: ignore[arg-type] # apply takes Columns

    return fn

def as_text(v: str, new: str | jsonspan.Spans | Columns) -> str:
    return jsonspan.splice(v, list(new)) if isinstance(new, (jsonspan.Spans, Columns)) else new
