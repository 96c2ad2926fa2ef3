"""The contentviews (inspect/views.py): this side, the other side and their diff, for a
flow the addon handled; labels say which side is which; picked automatically."""

from __future__ import annotations

from mitmproxy.test import tflow, tutils

from anthropic_util import build_stream
from disguiselib.inspect import views
from disguiselib.inspect.record import META, SIDES, side

UP = build_stream([("text", ["Zenith Labs"])])
DOWN = build_stream([("text", ["Acme Corp"])])


def flow(meta: dict | None = None, sides: dict | None = None):
    f = tflow.tflow(resp=tutils.tresp(content=DOWN))
    f.request.content = b'{"messages": [{"role": "user", "content": "Zenith Labs"}]}'
    f.response.headers["content-type"] = "text/event-stream"
    if meta is not None:
        f.metadata[META] = meta
    if sides is not None:
        f.metadata[SIDES] = sides
    return f


HANDLED = {"api": "anthropic.messages", "masked": 1, "counts": {"literals": 1}, "restored": 1}
SIDES_KEPT = {"client_request": side(b'{"messages": [{"role": "user", "content": "Acme Corp"}]}'),
              "upstream_response": side(UP)}  # fmt: skip


def test_this_side_other_side_and_diff_of_a_handled_flow() -> None:
    f = flow(HANDLED, SIDES_KEPT)
    this = views.render(views.NAMES[0], DOWN, f, f.response)
    assert this.startswith("disguise anthropic.messages: masked 1: literals×1; restored 1")
    assert "this: response as the client received it (restored)" in this and "Acme Corp" in this
    other = views.render(views.NAMES[1], DOWN, f, f.response)
    assert "other side: response as upstream sent it" in other and "Zenith Labs" in other
    diff = views.render(views.NAMES[2], DOWN, f, f.response)
    assert "-Zenith Labs" in diff and "+Acme Corp" in diff
    req = views.render(views.NAMES[1], f.request.content, f, f.request)
    assert "request as the client sent it" in req and "Acme Corp" in req


def test_what_was_not_kept_is_said() -> None:
    f = flow(HANDLED, {"client_request": side(b"x" * 4, 10, cut=True)})
    assert "not kept" in views.render(views.NAMES[1], DOWN, f, f.response)
    assert "no diff" in views.render(views.NAMES[2], DOWN, f, f.response)
    assert "CUT: 4 of 10 bytes kept" in views.render(views.NAMES[1], b"", f, f.request)
    plain = flow()
    assert views.render(views.NAMES[0], DOWN, plain, plain.response).startswith(
        "disguise: this flow was not handled by the addon")


def test_labels_of_dry_runs_refusals_and_shared_copies() -> None:
    dry = flow({"dry_run": True, "api": "a"})
    assert "NOT masked" in views.render(views.NAMES[0], b"{}", dry, dry.request)
    refused = flow({"api": "a", "failed": "x"})  # a summary without kept sides
    assert "not masked: see the summary" in views.render(views.NAMES[0], b"{}", refused, refused.request)
    shared = flow({"api": "a", "shared": True})
    assert "shared copy" in views.render(views.NAMES[0], DOWN, shared, shared.response)
    assert "not in a shared copy" in views.render(views.NAMES[1], DOWN, shared, shared.response)


def test_a_body_outside_a_flow_is_rendered_alone_and_priority_picks_handled_flows() -> None:
    assert views.render(views.NAMES[0], b'{"a": 1}', None, None) == '{\n  "a": 1\n}'
    f = flow(HANDLED, SIDES_KEPT)
    assert views.priority(views.NAMES[0], DOWN, f) > 1
    assert views.priority(views.NAMES[1], DOWN, f) <= 0 and views.priority(views.NAMES[0], b"", f) <= 0
    assert views.priority(views.NAMES[0], DOWN, flow()) <= 0


def test_register_and_unregister_the_three_views() -> None:
    from mitmproxy import contentviews

    got = views.register()
    try:
        assert [v.name for v in got] == list(views.NAMES)
        if not hasattr(contentviews, "Contentview"):  # mitmproxy 11 (12: a registry of its own)
            assert all(contentviews.get(n) is not None for n in views.NAMES)
        again = views.register()  # a reloaded script registers again
        views.unregister(again)
    finally:
        views.unregister(got)
