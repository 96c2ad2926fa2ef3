"""Logprobs: entries whose token would show the client a disguise are removed (sans I/O)."""

from __future__ import annotations

from ..core.rules import Restorer

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
        kept = [t for t in tops if not (isinstance(t, dict) and _holds_disguise(t.get("token"), r))]
        if len(kept) != len(tops):
            if out is None:
                out = list(entries)
            out[i] = {**e, "top_logprobs": kept}
    return out


def _holds_disguise(token: object, r: Restorer) -> bool:
    return isinstance(token, str) and r.value(token) != token


def clean_whole(text: str, entries: list, r: Restorer) -> list | None:
    """The logprobs entries of a whole text (a finished message, a `*.done` event) with
    every entry that overlaps a match removed (and alternatives cleaned); None when
    nothing changes. Tokens are laid over the text by their UTF-8 bytes."""
    spans = r.spans(text)  # every match whole-text reversal changes, a dangling strip too
    if not spans:
        return clean_alternatives(entries, r)
    # byte offsets of the spans
    bspans = sorted((len(text[:a].encode("utf-8", "surrogatepass")), len(text[:b].encode("utf-8", "surrogatepass")))
                    for a, b in spans)  # fmt: skip
    out = []
    pos = 0
    j = 0
    dropped = False
    for e in entries:
        if not isinstance(e, dict):
            out.append(e)
            continue
        b = e.get("bytes")
        tok = e.get("token")
        n = len(b) if isinstance(b, list) else len(tok.encode("utf-8", "surrogatepass")) if isinstance(tok, str) else 0
        a, z = pos, pos + n
        pos = z
        while j < len(bspans) and bspans[j][1] <= a:
            j += 1
        if j < len(bspans) and bspans[j][0] < z and n > 0:
            dropped = True
            continue
        out.append(e)
    cleaned = clean_alternatives(out, r)
    if cleaned is not None:
        return cleaned
    return out if dropped else None


def logprob_fixes(doc: object, r: Restorer) -> list[tuple[tuple, object]]:
    """Where a parsed (upstream) document's logprobs must change, and to what: (path,
    new value) pairs. Knows Chat choices (`logprobs.content` / `.refusal` beside
    `message`), Responses output_text parts and `output_text.done` events (`text`
    beside `logprobs`) and realtime transcriptions (`transcript` beside `logprobs`)."""
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
        elif isinstance(lp, dict) and isinstance(x.get("message"), dict):
            for field in ("content", "refusal"):
                entries = lp.get(field)
                text = x["message"].get(field)
                if isinstance(entries, list) and entries:
                    new = clean_whole(text if isinstance(text, str) else "", entries, r)
                    if new is not None:
                        fixes.append(((*path, "logprobs", field), new))
        stack.extend(((*path, k), v) for k, v in x.items() if k != "logprobs" and isinstance(v, (dict, list)))
    return fixes


def apply_fixes(doc: object, fixes: list[tuple[tuple, object]]) -> None:
    """Set each (path, value) of fixes in doc (a parsed document of the same shape)."""
    for path, value in fixes:
        x = doc
        for k in path[:-1]:
            x = x[k]  # type: ignore[index]
        x[path[-1]] = value  # type: ignore[index]

