"""Flow files: mitmproxy flows -> audit records, and the shareable copy (adapter-level:
reads and writes mitmproxy's format).

What a flow file written with the addon holds (`mitmdump -w`): the request as it went
upstream (masked) with its headers — the provider's credentials included; the response
as the client received it (restored: originals); and in metadata the request as the
client sent it (originals) and the response as upstream sent it. It is as secret as
the session itself. `write_shared` makes a copy with the provider side only.
"""

from __future__ import annotations

import os
import tempfile
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from mitmproxy import exceptions, http, io
from mitmproxy import flow as mflow

from .. import leakguard
from ..apis.registry import recognise, recognise_ws, slots_for
from ..errors import MaskError
from ..rules.rules import Rules
from . import audit, wsview
from .record import (
    FORWARDED,
    META,
    NEVER_SENT,
    REQUEST_NOT_KEPT,
    SIDES,
    content,
    destination,
    is_credential,
    is_refused,
)


class ShareError(Exception):
    """A shared copy could not be written safely; nothing was written."""


def read(paths: Sequence[str], progress: Callable[[int, int], None] | None = None) -> list[mflow.Flow]:
    """Every flow in the files. Raises FlowReadException naming the file for one that
    cannot be opened or read. progress, if given, is called after each flow with the
    bytes read so far and the files' total size."""
    out: list[mflow.Flow] = []
    done = 0
    try:
        files = [os.path.expanduser(p) for p in paths]
        total = sum(os.path.getsize(p) for p in files)
        for p in files:
            with open(p, "rb") as f:
                try:
                    for flow in io.FlowReader(f).stream():
                        out.append(flow)
                        if progress is not None:
                            progress(done + f.tell(), total)
                except exceptions.FlowReadException as e:
                    where = f"flow {len(out) + 1}" if out else "its start"
                    why = str(e).rstrip(".")
                    raise exceptions.FlowReadException(f"{p}: not a mitmproxy flow file ({why}, at {where})") from None
            done += os.path.getsize(p)
    except OSError as e:
        raise exceptions.FlowReadException(f"{e.filename}: {e.strerror}") from None
    return out


def _label(f: http.HTTPFlow) -> str:
    return f"{f.request.method} {f.request.path.split('?', 1)[0]}"


def ws_messages(flow: http.HTTPFlow, other: bool = False) -> list[wsview.Msg]:
    """A WebSocket flow's messages as they went (other=False: what upstream and the
    client received, dropped ones marked), or their other sides (other=True: the client's
    events as it sent them, upstream's as it sent them; injected ones left out)."""
    ws = flow.websocket
    if ws is None:
        return []
    kept: dict[int, bytes] = {}
    sides = flow.metadata.get(SIDES)
    if other and isinstance(sides, dict):
        for item in sides.get("websocket_other") or ():
            if isinstance(item, list | tuple) and len(item) == 2:
                kept[int(item[0])] = bytes(item[1])
    out = []
    for i, m in enumerate(ws.messages):
        state = wsview.DROPPED if m.dropped else (wsview.INJECTED if m.injected else wsview.SENT)
        if other:
            if m.injected:
                continue
            out.append(wsview.Msg(m.from_client, kept.get(i, m.content), wsview.SENT))
        else:
            out.append(wsview.Msg(m.from_client, m.content, state))
    return out


def _ws_api(f: http.HTTPFlow):
    if "websocket" not in f.request.headers.get("upgrade", "").lower():
        return None
    return recognise_ws(f.request.path)


def record(i: int, f: mflow.Flow) -> audit.Record:
    if not isinstance(f, http.HTTPFlow):
        return audit.Record(i, type(f).__name__, None, None, None)
    ws_api = _ws_api(f)
    if ws_api is not None:
        return _ws_record(i, f, ws_api.name)
    api = recognise(f.request.method, f.request.path)
    m, sd = f.metadata.get(META), f.metadata.get(SIDES)
    meta: dict = m if isinstance(m, dict) else {}
    sides: dict = sd if isinstance(sd, dict) else {}
    try:  # bounded: mitmproxy's get_content expands a recorded bomb whole
        received = content(f.response, strict=False) if f.response is not None else None
        sent = None if is_refused(f) else content(f.request, strict=False)
    except MaskError as e:  # unread, a flow would pass the audit unseen: the reading stops
        raise exceptions.FlowReadException(f"flow {i} {_label(f)}: {e}") from None
    ctype = f.response.headers.get("content-type", "") if f.response is not None else ""
    cr = sides.get("client_response") or {}
    r = audit.Record(
        index=i, label=_label(f), api=api.name if api else None,
        sent=sent,
        received=received, received_type=ctype, sent_type=f.request.headers.get("content-type", ""),
        received_cut=bool(cr.get("cut")) or bool(meta.get("shared") and meta.get("cut")),
        shared=bool(meta.get("shared")), fakes=_fakes(meta),
        sent_cut=sent is not None and bool(f.metadata.get(REQUEST_NOT_KEPT)),
        masked_by=meta["rules"] if isinstance(meta.get("rules"), dict) and sent is not None else None,
        sent_coded=sent is not None and _undecodable(f.request),
    )  # fmt: skip
    if is_refused(f):
        r.note = f"refused by the addon: {NEVER_SENT}"
    elif f.metadata.get(FORWARDED):
        r.note = "forwarded with an original (disguise_allow_unknown)"
    elif meta.get("dry_run") or not meta:
        r.note = "not masked by the addon"
    elif str(meta.get("failed", "")).startswith("forwarded UNMASKED"):
        r.note = "forwarded unmasked (disguise_fail_open)"
    elif str(meta.get("end", "")).startswith("ERROR") and not r.shared:
        r.note = "the response ended with an error"  # the client got an error (its reason: `disguise show`)
    if r.shared:
        r.headers = [("request", k, v) for k, v in f.request.headers.items(multi=True)]
        if f.response is not None:
            r.headers += [("response", k, v) for k, v in f.response.headers.items(multi=True)]
        r.extra_text = [("url", f.request.url)]
        if SIDES in f.metadata:
            r.extra_text.append(("metadata", repr(f.metadata[SIDES])))
            r.note = "shared copy still holds the client side in metadata"
        r.extra_text.append(("comment", f.comment))
    elif r.sent is not None:
        # what went upstream besides the body, as the leak guard reads it: the URL
        # (percent-decoded too, a credential parameter in its place left out) and every
        # header but the client's credentials
        sent_headers = list(f.request.headers.items(multi=True))
        slots = slots_for(f.request.path, api, destination(f), sent_headers)
        url = leakguard.without_credentials(f.request.path, slots)
        r.extra_text = [("url", t) for t in dict.fromkeys((url, urllib.parse.unquote_plus(url)))]
        r.headers = [("request", k, v) for k, v in leakguard.without_credential_headers(sent_headers, slots)]
    return r


def _undecodable(msg: http.Message) -> bool:
    """Has msg a body in a content-encoding disguise does not decode (`gzip, gzip`, one it
    does not know)? Read as it came (content, not strict), its originals are unseen: only
    what forwards a request as it came lets one go upstream (fail-open, allow_unknown)."""
    if not msg.raw_content or not msg.headers.get("content-encoding", "").strip():
        return False
    try:
        content(msg)
    except MaskError:
        return True
    return False


def _ws_record(i: int, f: http.HTTPFlow, api: str) -> audit.Record:
    """A realtime WebSocket flow: its messages as they went (audit.Record.messages)."""
    m = f.metadata.get(META)
    meta: dict = m if isinstance(m, dict) else {}
    r = audit.Record(index=i, label=f"WebSocket {_label(f)}", api=api, sent=None, received=None,
                     messages=ws_messages(f), shared=bool(meta.get("shared")), fakes=_fakes(meta))  # fmt: skip
    if f.websocket is None:
        r.note = "no WebSocket connection (refused, or the upgrade failed)"
    elif not meta:
        r.note = "not handled by the addon"
    return r


def _fakes(meta: dict) -> frozenset[str]:
    """The fakes a flow's summary lists (record.set_fakes): strings only."""
    fk = meta.get("fakes")
    return frozenset(x for x in fk if isinstance(x, str)) if isinstance(fk, list) else frozenset()


def records(flows: Iterable[mflow.Flow]) -> list[audit.Record]:
    return [record(i, f) for i, f in enumerate(flows, 1)]


def _strip_query(url_path: str) -> tuple[str, list[str]]:
    """The path with every credential query parameter removed, and their names."""
    path, sep, query = url_path.partition("?")
    if not sep:
        return url_path, []
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    kept = [(k, v) for k, v in pairs if not is_credential(k)]
    removed = list(dict.fromkeys(k for k, _ in pairs if is_credential(k)))
    return path + ("?" + urllib.parse.urlencode(kept) if kept else ""), removed


def left_out(f: mflow.Flow) -> str:
    """Why shared_copy has nothing of this flow to share (said in share's output)."""
    if not isinstance(f, http.HTTPFlow):
        return "not HTTP"
    if f.websocket is not None or "websocket" in f.request.headers.get("upgrade", "").lower():
        return "WebSocket"
    if is_refused(f):
        return "refused by the addon"
    if recognise(f.request.method, f.request.path) is None:
        return "not an API disguise transforms"
    meta = f.metadata.get(META)
    if isinstance(meta, dict) and str(meta.get("failed", "")).startswith("forwarded UNMASKED"):
        return "forwarded unmasked"
    if _cut(f):
        return CUT
    if f.metadata.get(REQUEST_NOT_KEPT):
        return NOT_KEPT
    return "not masked by the addon, or its upstream side not kept"


# Why a flow whose kept upstream response was cut is left out: a replay of the copy
# (mitmproxy's server replay, with or without the addon) would serve the part kept as
# the whole answer, a silent truncation (contract §4, §6); client replay refuses such a
# flow for the same reason (replay.py).
CUT = "upstream response cut at disguise_capture_limit (a replay would serve it as whole)"


# Why a flow whose request body mitmproxy streamed upstream is left out when that body was
# larger than the capture limit: the flow holds none of it, and a copy without it would
# neither be audited nor match a request in server replay.
NOT_KEPT = "request body streamed upstream, larger than disguise_capture_limit: not kept"


def _cut(f: http.HTTPFlow) -> bool:
    sides = f.metadata.get(SIDES)
    up = sides.get("upstream_response") if isinstance(sides, dict) else None
    return isinstance(up, dict) and bool(up.get("cut"))


def left_out_text(counts: dict[str, int]) -> str:
    """`3 left out (2 WebSocket, 1 refused by the addon)`."""
    n = sum(counts.values())
    if not n:
        return "0 left out"
    return f"{n} left out ({', '.join(f'{k} {why}' for why, k in sorted(counts.items(), key=lambda t: -t[1]))})"


def shared_copy(f: mflow.Flow) -> http.HTTPFlow | None:
    """The provider side of one flow, or None when it has none to share: not an LLM
    flow the addon masked, refused, or its upstream response was not kept whole (CUT)."""
    if not isinstance(f, http.HTTPFlow) or recognise(f.request.method, f.request.path) is None:
        return None
    meta = f.metadata.get(META)
    sides = f.metadata.get(SIDES)
    if not isinstance(meta, dict) or not isinstance(sides, dict) or meta.get("dry_run") or is_refused(f):
        return None
    if str(meta.get("failed", "")).startswith("forwarded UNMASKED"):
        return None
    up = sides.get("upstream_response")
    if f.response is not None and not (isinstance(up, dict) and "content" in up):
        return None
    if _cut(f) or f.metadata.get(REQUEST_NOT_KEPT):
        return None
    g = f.copy()
    g._backup = None  # a replayed flow keeps its earlier state here (restored response included)
    g.marked = ""
    for name in [k for k in g.request.headers if is_credential(k)]:
        del g.request.headers[name]
    g.request.path, removed = _strip_query(g.request.path)
    summary = {k: meta[k] for k in ("api", "masked", "counts", "placeholders", "fakes", "end") if k in meta}
    summary["shared"] = True
    if removed:  # server replay matches the copy only when told to ignore them (replay_note)
        summary["removed_params"] = removed
    if g.response is not None and isinstance(up, dict):
        headers = http.Headers(
            [(k.encode(), v.encode()) for k, v in (up.get("headers") or [])
             if k.lower() not in ("content-length", "content-encoding") and not is_credential(k)]
        )  # fmt: skip
        g.response.headers = headers
        if up.get("status"):
            g.response.status_code = int(up["status"])
        if up.get("encoding"):  # kept as it came: could not be decoded (cut)
            g.response.headers["content-encoding"] = up["encoding"]
            g.response.raw_content = up["content"]
        elif "transfer-encoding" in g.response.headers:
            g.response.raw_content = up["content"]
        else:
            g.response.content = up["content"]
    g.metadata = {META: summary}
    g.comment = f"disguise shared copy: provider side only ({summary.get('api')})"
    return g


def replay_note(removed: dict[str, int]) -> str:
    """What share says of the credential query parameters it removed (Google's `key`):
    mitmproxy's server replay matches the query, so a client that sends one again matches
    the copy only when told to ignore it. "" when none was removed."""
    if not removed:
        return ""
    names = sorted(removed)
    counts = ", ".join(f"{k} in {removed[k]} flow{'s' if removed[k] != 1 else ''}" for k in names)
    return (f"credential query parameters removed from the URLs ({counts}): server replay matches those flows "
            f"only with --set server_replay_ignore_params={','.join(names)}")


class Shared(NamedTuple):
    written: int
    dropped: dict[str, int]  # how many flows were left out for each reason
    removed: dict[str, int]  # credential query parameter -> flows it was removed from


def write_shared(flows: Iterable[mflow.Flow], path: str, rules: Rules) -> Shared:
    """Write the provider side of flows to path; how many were written, how many were
    left out for each reason (WebSocket and refused flows are left out entirely), and
    the credential query parameters removed. The copy is audited before it is moved into
    place: on any finding nothing is written and ShareError carries the audit report."""
    out: list[http.HTTPFlow] = []
    dropped: dict[str, int] = {}
    removed: dict[str, int] = {}
    for f in flows:
        g = shared_copy(f)
        if g is None:
            why = left_out(f)
            dropped[why] = dropped.get(why, 0) + 1
        else:
            out.append(g)
            for name in g.metadata[META].get("removed_params", ()):
                removed[name] = removed.get(name, 0) + 1
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".disguise-share-", dir=d)
    try:
        with os.fdopen(fd, "wb") as fo:
            w = io.FlowWriter(fo)
            for g in out:
                w.add(g)
        report = audit.audit(records(read([tmp])), rules)
        if report.leaks:
            raise ShareError("the shared copy would not pass the audit; nothing written:\n" + report.text())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return Shared(len(out), dropped, removed)
