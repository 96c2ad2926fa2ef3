"""The adapter in-process for the contentview and capture tests: a flow through every
hook of the real Disguise with a streamed answer, and a contentview's text as the installed
mitmproxy's own view API produces it (11: `get_message_content_view` lines of styled
segments; 12: `prettify_message` text)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from mitmproxy import contentviews
from mitmproxy.test import taddons, tflow, tutils

from disguiselib.config import Config
from disguiselib.inspect import render, views
from disguiselib.mitm.addon import Disguise

NEW_API = hasattr(contentviews, "Contentview")


@contextlib.contextmanager
def adapter(tmp_path: Path, mapping: str):
    (tmp_path / "m.yaml").write_text(mapping)
    a = Disguise()
    before = views._rules_in_force  # the Inspector's load puts its rules in force for every view
    with taddons.context(a, a.inspect) as tctx:
        try:
            tctx.configure(a, disguise_mappings=[str(tmp_path / "m.yaml")])
            yield a
        finally:
            tctx.master.event_loop.close()
            views._rules_in_force = before  # no later test renders with these rules


def through(a: Disguise, path: str, host: str, body: bytes, answer: bytes, ctype: str, chunk: int = 7,
            got: list[bytes] | None = None):
    """A flow through every hook; the answer streamed in `chunk`-byte pieces (what the
    stream callable gave the client: appended to `got`)."""
    f = tflow.tflow()
    f.request.method = "POST"
    f.request.host = host
    f.request.path = path
    f.request.headers["content-type"] = "application/json"
    f.request.content = body
    a.request(f)
    f.response = tutils.tresp(content=None)
    f.response.headers["content-type"] = ctype
    a.responseheaders(f)
    assert f.response.stream, "an LLM stream must be streamed"
    out = []
    for i in range(0, len(answer), chunk):
        out.extend(f.response.stream(answer[i : i + chunk]))
    out.extend(f.response.stream(b""))
    if got is not None:
        got.extend(out)
    f.response.data.content = b""  # mitmproxy 11 keeps nothing of a streamed body
    a.response(f)
    return f


@contextlib.contextmanager
def registered(a: Disguise | Config):
    """The views registered with a's rules in force (the adapter's, or a configuration's)."""
    before = views._rules_in_force
    regs = views.register(lambda: a.rules)
    try:
        yield
    finally:
        views.unregister(regs)
        views._rules_in_force = before


def shown(f, message, name: str, unwrapped: bool = True) -> str:
    """The view's text as mitmproxy itself produces it for mitmweb; unwrapped: the
    lines the view wrapped joined again."""
    if NEW_API:
        text = contentviews.prettify_message(message, f, name.lower()).text
    else:
        _, lines, err = contentviews.get_message_content_view(name, message, f)
        assert err is None, err
        text = "\n".join("".join(t for _, t in line) for line in lines)
    return text.replace(render.WRAP_MARK + "\n", "") if unwrapped else text
