"""The contentviews read the API's field table: a request body is followed by the fields
the table exempts by design (what went out as it came on purpose), named by their kind."""

from __future__ import annotations

import json

from mitmproxy.test import tflow, tutils

from disguiselib.inspect import views

BODY = {
    "model": "claude-x",
    "max_tokens": 10,
    "messages": [
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "about Acme Corp", "signature": "EqQBCkYIBxgC"},
            {"type": "tool_use", "id": "toolu_01", "name": "x", "input": {}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        ]},
        {"role": "user", "content": "hello"},
    ],
}  # fmt: skip


def flow_with(body: dict, path: str = "/v1/messages"):
    f = tflow.tflow(req=tutils.treq(method=b"POST", path=path.encode(), content=json.dumps(body).encode()))
    f.metadata["disguise"] = {"api": "anthropic.messages", "masked": 0, "counts": {}}
    return f


def test_the_request_view_lists_what_the_table_exempts() -> None:
    f = flow_with(BODY)
    text = views.render("Disguise", f.request.content, f, f.request)
    assert "untouched by design (the API's field table): 5 fields" in text
    lines = text.splitlines()
    assert "messages[0].content[0].thinking: opaque (15 chars)" in lines
    assert "messages[0].content[0].signature: opaque (12 chars)" in lines
    assert "messages[0].content[1].id: identifier (8 chars)" in lines
    assert "messages[0].content[2].source.data: media (12 chars)" in lines
    assert not any(line.startswith("messages[1]") for line in lines)  # masked: not listed


def test_a_flow_of_no_api_has_no_table() -> None:
    f = flow_with(BODY, "/v2/something")
    text = views.render("Disguise", f.request.content, f, f.request)
    assert "untouched by design" not in text
