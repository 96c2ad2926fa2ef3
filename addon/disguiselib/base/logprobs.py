"""Logprobs: no token shows the client a disguise (sans I/O)."""

from __future__ import annotations

from collections.abc import Callable

from ..rules.rules import Restorer

# -- logprobs -----------------------------------------------------------------------------
#
# A logprobs entry carries a token of the text as the model wrote it: a token of a
# disguise or placeholder would show the client what the provider saw. Rule (docs/
# fields.md): an entry whose token overlaps a disguise, a placeholder or a strip match
# is removed, and so is an alternative (`top_logprobs`) that holds a whole disguise; the
# other entries stay as they came. In a stream, where a match can span events, every
# entry of an event whose text the hold-back window changed or held is removed. The
# client sees gaps, never a disguise; no probability is made up.


def clean_alternatives(entries: list, r: Restorer) -> list | None:
    """entries with every `top_logprobs` alternative that holds a whole disguise
    removed; None when nothing had to go."""
    out = None
    for i, e in enumerate(entries):
        tops = e.get("top_logprobs") if isinstance(e, dict) else None
        if not isinstance(tops, list) or not tops:
            continue
        kept = [t for t in tops if not (isinstance(t, dict) and holds_disguise(t.get("token"), r))]
        if len(kept) != len(tops):
            if out is None:
                out = list(entries)
            out[i] = {**e, "top_logprobs": kept}
    return out


def holds_disguise(token: object, r: Restorer) -> bool:
    return isinstance(token, str) and r.value(token) != token


def clean_whole(text: str, entries: list, r: Restorer) -> list | None:
    """The logprobs entries of a whole text (a finished message, a `*.done` event) with
    every entry that overlaps a match removed (and alternatives cleaned); None when
    nothing changes. Tokens are laid over the text by their UTF-8 bytes."""
    drop = overlapping(text, entries, r)
    out = [e for i, e in enumerate(entries) if i not in drop] if drop else entries
    cleaned = clean_alternatives(out, r)
    if cleaned is not None:
        return cleaned
    return out if drop else None


def overlapping(text: str, entries: list, r: Restorer, token: str = "token") -> set[int]:
    """The indexes of the entries (each with its `token`, or Chat's `bytes`) whose token
    overlaps a match whole-text reversal of text changes, laid over it by UTF-8 bytes."""
    spans = r.spans(text)  # every match whole-text reversal changes, a dangling strip too
    if not spans:
        return set()
    # byte offsets of the spans
    bspans = sorted((len(text[:a].encode("utf-8", "surrogatepass")), len(text[:b].encode("utf-8", "surrogatepass")))
                    for a, b in spans)  # fmt: skip
    drop = set()
    pos = 0
    j = 0
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            continue
        b = e.get("bytes")
        tok = e.get(token)
        n = len(b) if isinstance(b, list) else len(tok.encode("utf-8", "surrogatepass")) if isinstance(tok, str) else 0
        a, z = pos, pos + n
        pos = z
        while j < len(bspans) and bspans[j][1] <= a:
            j += 1
        if j < len(bspans) and bspans[j][0] < z and n > 0:
            drop.add(i)
    return drop


# Logprobs of another shape, beside their text under a member of their own (Gemini's
# `logprobsResult`): the API's module registers how it lays them over their text.
# member -> fix(container, result, restorer) -> the new result, or None: unchanged.
MEMBER_FIXES: dict[str, Callable[[dict, dict, Restorer], dict | None]] = {}


def register(member: str, fix: Callable[[dict, dict, Restorer], dict | None]) -> None:
    """How an API's logprobs under `member` are fixed (logprob_fixes, whole bodies)."""
    MEMBER_FIXES[member] = fix


def logprob_fixes(doc: object, r: Restorer) -> list[tuple[tuple, object]]:
    """Where a parsed (upstream) document's logprobs must change, and to what: (path,
    new value) pairs. Knows Chat choices (`logprobs.content` / `.refusal` beside
    `message`), Responses output_text parts and `output_text.done` events (`text`
    beside `logprobs`), realtime transcriptions (`transcript` beside `logprobs`), legacy
    Completions choices (`logprobs.tokens` beside `text`), and what MEMBER_FIXES names."""
    fixes: list[tuple[tuple, object]] = []
    stack: list[tuple[tuple, object]] = [((), doc)]
    while stack:
        path, x = stack.pop()
        if isinstance(x, list):
            stack.extend(((*path, i), v) for i, v in enumerate(x))
            continue
        if not isinstance(x, dict):
            continue
        lp = x.get("logprobs")
        # the text the entries are tokens of: `text`, or a realtime transcription's `transcript`
        text = x.get("text") if isinstance(x.get("text"), str) else x.get("transcript")
        if isinstance(lp, list) and lp and isinstance(text, str):
            new = clean_whole(text, lp, r)
            if new is not None:
                fixes.append(((*path, "logprobs"), new))
        elif isinstance(lp, dict) and isinstance(lp.get("tokens"), list) and isinstance(x.get("text"), str):
            lp_new = completion_whole(lp, x["text"], r)  # a legacy Completions choice
            if lp_new is not None:
                fixes.append(((*path, "logprobs"), lp_new))
        elif isinstance(lp, dict) and isinstance(x.get("message"), dict):
            for field in ("content", "refusal"):
                entries = lp.get(field)
                text = x["message"].get(field)
                if isinstance(entries, list) and entries:
                    new = clean_whole(text if isinstance(text, str) else "", entries, r)
                    if new is not None:
                        fixes.append(((*path, "logprobs", field), new))
        for member, fix in MEMBER_FIXES.items():
            result = x.get(member)
            if isinstance(result, dict):
                result_new = fix(x, result, r)
                if result_new is not None:
                    fixes.append(((*path, member), result_new))
        stack.extend(((*path, k), v) for k, v in x.items()
                     if k != "logprobs" and k not in MEMBER_FIXES and isinstance(v, (dict, list)))  # fmt: skip
    return fixes


def apply_fixes(doc: object, fixes: list[tuple[tuple, object]]) -> None:
    """Set each (path, value) of fixes in doc (a parsed document of the same shape)."""
    for path, value in fixes:
        x = doc
        for k in path[:-1]:
            x = x[k]  # type: ignore[index]
        x[path[-1]] = value  # type: ignore[index]



# -- legacy Completions: parallel arrays, offsets into the text ---------------------------
#
# A `/v1/completions` choice's `logprobs` is four parallel arrays: `tokens`,
# `token_logprobs`, `top_logprobs` (per token a {token: logprob} map) and `text_offset`
# (where each token starts, in characters). Rule: the tokens are laid over the choice's
# text; the tokens a restored match overlaps become one entry whose token is their
# restored text, with no probability (null: the model gave none for that text) and no
# alternatives; every other entry stays, its offset moved by what the restorations
# before it changed. An alternative that holds a whole disguise is dropped. So the
# tokens join to the restored text and each offset points at its token in it; the
# client sees no disguise and no made-up probability. Tokens that cannot be laid over
# the text (a character's bytes split between tokens) lose their entries, as Chat's do.

ARRAYS = ("tokens", "token_logprobs", "top_logprobs", "text_offset")


def clean_top_keys(tops: object, r: Restorer) -> list | None:
    """Completions' `top_logprobs` (a {token: logprob} map per token) with every key that
    holds a whole disguise dropped; None when nothing had to go."""
    if not isinstance(tops, list):
        return None
    out = None
    for i, t in enumerate(tops):
        if isinstance(t, dict) and any(holds_disguise(k, r) for k in t):
            if out is None:
                out = list(tops)
            out[i] = {k: v for k, v in t.items() if not holds_disguise(k, r)}
    return out


def _arrays(lp: dict) -> dict[str, list]:
    return {a: lp[a] for a in ARRAYS if isinstance(lp.get(a), list)}


def _shifted(offsets: list, i: int, shift: int) -> object:
    o = offsets[i]
    return o + shift if isinstance(o, int) and not isinstance(o, bool) else o


def completion_whole(lp: dict, text: str, r: Restorer) -> dict | None:
    """A whole choice's logprobs laid over its restored text (the rule above); None when
    nothing changes."""
    tokens = lp.get("tokens")
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        return None
    edits = r.edits(text)
    if not edits:
        tops = clean_top_keys(lp.get("top_logprobs"), r)
        return None if tops is None else {**lp, "top_logprobs": tops}
    arrays = _arrays(lp)
    n = len(tokens)
    if "".join(tokens) != text or any(len(v) != n for v in arrays.values()):
        return {**lp, **{a: [] for a in arrays}}
    pos = [0] * (n + 1)
    for i, t in enumerate(tokens):
        pos[i + 1] = pos[i] + len(t)
    # the token ranges [lo, hi] the matches overlap (edits[a..b]), merged where they share a token
    groups: list[list[int]] = []
    i = 0
    for j, (s, e, _) in enumerate(edits):
        while i < n and pos[i + 1] <= s:
            i += 1
        hi = i
        while hi + 1 < n and pos[hi + 1] < e:
            hi += 1
        if groups and i <= groups[-1][1]:
            groups[-1][1] = max(hi, groups[-1][1])
            groups[-1][3] = j
        else:
            groups.append([i, hi, j, j])
    tops = clean_top_keys(arrays.get("top_logprobs"), r) or arrays.get("top_logprobs")
    out: dict[str, list] = {a: [] for a in arrays}
    shift = 0
    g = 0
    i = 0
    while i < n:
        if g < len(groups) and groups[g][0] == i:
            lo, hi, a, b = groups[g]
            pieces, p = [], pos[lo]
            for s, e, rep in edits[a : b + 1]:
                pieces += [text[p:s], rep]
                p = e
            pieces.append(text[p : pos[hi + 1]])
            entry: dict[str, object] = {"tokens": "".join(pieces), "token_logprobs": None, "top_logprobs": None}
            if "text_offset" in arrays:
                entry["text_offset"] = _shifted(arrays["text_offset"], lo, shift)
            for k in out:
                out[k].append(entry[k])
            shift += sum(len(rep) - (e - s) for s, e, rep in edits[a : b + 1])
            i, g = hi + 1, g + 1
            continue
        for k in out:
            v = arrays[k][i]
            if k == "top_logprobs" and tops is not None:
                v = tops[i]
            elif k == "text_offset":
                v = _shifted(arrays[k], i, shift)
            out[k].append(v)
        i += 1
    return {**lp, **out}


def completion_chunk(lp: dict, out: str, touched: bool, shift: int, start: int | None, r: Restorer) -> dict:
    """A streamed chunk's logprobs for one choice: a chunk whose text the window passed
    as it came keeps its entries, offsets moved by `shift` (what restorations before it
    changed) and alternatives cleaned; one whose text the window changed or held gets
    one entry for the text it sends (`out`, at `start` in the restored text; none when
    it sends none), with no probability."""
    arrays = _arrays(lp)
    if not touched:
        new = dict(lp)
        tops = clean_top_keys(arrays.get("top_logprobs"), r)
        if tops is not None:
            new["top_logprobs"] = tops
        if shift and "text_offset" in arrays:
            offs = arrays["text_offset"]
            new["text_offset"] = [_shifted(offs, i, shift) for i in range(len(offs))]
        return new
    entry = {"tokens": out, "token_logprobs": None, "top_logprobs": None, "text_offset": start}
    return {**lp, **{a: ([entry[a]] if out else []) for a in arrays}}
