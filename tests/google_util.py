"""Build Gemini streams (SSE and JSON array) and read them back the way a client does."""

from __future__ import annotations

import json
from pathlib import Path

from disguiselib.wire.sse import Framer

GEMINI_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "real" / "gemini"
USAGE = {"promptTokenCount": 13, "candidatesTokenCount": 5, "totalTokenCount": 18}


def enc(obj: object, spaced: bool = False) -> str:
    """The API's own separators (`,` between members, `": "` after keys: see the recorded
    streams); spaced: `", "` as well. UTF-8, \\u escapes where a lone surrogate forces them."""
    seps = (", ", ": ") if spaced else (",", ": ")
    try:
        return json.dumps(obj, ensure_ascii=False, separators=seps).encode().decode()
    except UnicodeEncodeError:
        return json.dumps(obj, separators=seps)


def chunk(cands: list[dict], **extra) -> dict:
    return {"candidates": cands, "usageMetadata": USAGE, "modelVersion": "gemini-2.5-flash",
            "responseId": "resp-1", **extra}


def cand(k: int, parts: list[dict] | None, finish: str | None = None, content: bool = True) -> dict:
    c: dict = {}
    if content:
        c["content"] = {"parts": parts, "role": "model"} if parts is not None else {"role": "model"}
    if finish:
        c["finishReason"] = finish
    c["index"] = k
    return c


def build_chunks(steps: list[tuple]) -> list[dict]:
    """steps: ("text", k, s) | ("thought", k, s) | ("call", k, name, args, signature_or_None)
    | ("finish", k, how) with how: "alone" (a chunk of its own with an empty text part),
    "bare" (no content), "parts" (content without parts), "call" (only a function call
    part), or "text:<s>" (the last text comes with the finish)."""
    out = []
    for st in steps:
        kind, k = st[0], st[1]
        if kind == "text":
            out.append(chunk([cand(k, [{"text": st[2]}])]))
        elif kind == "thought":
            out.append(chunk([cand(k, [{"text": st[2], "thought": True}])]))
        elif kind == "call":
            part: dict = {"functionCall": {"name": st[2], "args": st[3]}}
            if st[4]:
                part["thoughtSignature"] = st[4]
            out.append(chunk([cand(k, [part])]))
        else:
            how = st[2]
            if how == "alone":
                c = cand(k, [{"text": ""}], "STOP")
            elif how == "bare":
                c = cand(k, None, "STOP", content=False)
            elif how == "parts":
                c = cand(k, None, "STOP")
            elif how == "call":
                c = cand(k, [{"functionCall": {"name": "crm_lookup", "args": {"thread_id": "x"}}}], "STOP")
            else:
                c = cand(k, [{"text": how[5:]}], "STOP")
            out.append(chunk([c]))
    return out


def to_sse(chunks: list[dict], eol: str = "\r\n", spaced: bool = False) -> bytes:
    return b"".join(f"data: {enc(c, spaced)}{eol}{eol}".encode() for c in chunks)


def to_array(chunks: list[dict], seps: list[str] | None = None, pretty: bool = False) -> bytes:
    """A streamed JSON array as the API sends it without alt=sse: `[{...}\\n,\\r\\n{...}\\n]`
    (seps: the whitespace-and-comma text between elements, one per gap)."""
    def dump(c: dict) -> str:
        try:
            return json.dumps(c, indent=2 if pretty else None, ensure_ascii=False).encode().decode()
        except UnicodeEncodeError:  # a lone surrogate: \u escapes, as the API would send
            return json.dumps(c, indent=2 if pretty else None)

    bodies = [dump(c) for c in chunks]
    out = "["
    for i, b in enumerate(bodies):
        if i:
            out += seps[i - 1] if seps else "\n,\r\n"
        out += b
    return (out + "\n]").encode("utf-8")


def sse_chunks(body: bytes) -> list[dict]:
    """Every event's data, parsed (each must parse)."""
    f = Framer()
    return [json.loads(e.data) for e in f.feed(body) + f.flush() if e.data is not None]


def read_chunks(chunks: list[dict]) -> dict:
    """Accumulate like google-genai: per candidate its text (non-thought parts), its
    thought text, its function calls and thought signatures; also checks that nothing
    of a candidate arrives after the chunk with its finishReason, and notes an error."""
    got: dict = {"text": {}, "thought": {}, "calls": {}, "signatures": [], "finished": set(), "error": None}
    for c in chunks:
        if "error" in c:
            assert got["error"] is None, "two errors"
            got["error"] = c["error"]
            continue
        assert got["error"] is None, "a chunk after the error"
        for cd in c.get("candidates", []):
            k = cd.get("index", 0)
            parts = (cd.get("content") or {}).get("parts") or []
            for p in parts:
                assert k not in got["finished"], "a part after its candidate's finishReason"
                if "thoughtSignature" in p:
                    got["signatures"].append(p["thoughtSignature"])
                if "functionCall" in p:
                    got["calls"].setdefault(k, []).append(p["functionCall"])
                elif p.get("thought"):
                    got["thought"][k] = got["thought"].get(k, "") + p["text"]
                elif "text" in p:
                    got["text"][k] = got["text"].get(k, "") + p["text"]
            if cd.get("finishReason"):
                got["finished"].add(k)
    return got
