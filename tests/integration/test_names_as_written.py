"""End to end: a key the masker sends as written (fields.NAME: a stored prompt's variable
name, an MCP server's header name) that holds an original is refused by the leak guard
before anything leaves, and the official openai SDK gets a clear error naming the rule
and the place, never the key. The official openai SDK -> a real mitmdump running the
addon -> a fake upstream that records what reached it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from integration_util import MITMDUMP, Proxy, Reply, running_proxy

openai = pytest.importorskip("openai")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

BOB = "bob@corp.example.com"
MAPPINGS = {
    "literals": {"Acme Corp": "Zenith Labs", "acme_lookup": "crm_lookup"},
    "patterns": [{"name": "EMAIL", "regex": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"}],
}
ORIGINALS = ("Acme Corp", "acme_lookup", BOB, "bob@")


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    with running_proxy(tmp_path_factory.mktemp("disguise-names"), MAPPINGS) as p:
        yield p


def _client(proxy: Proxy) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=proxy.base_url + "/v1", api_key="test", max_retries=0, timeout=20.0,
        http_client=openai.DefaultHttpxClient(trust_env=False),
    )  # fmt: skip


def _answer(text: str) -> Reply:
    doc = {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "scn-names",
           "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]}]}  # fmt: skip
    return Reply([json.dumps(doc).encode()], headers={"Content-Type": "application/json"}, framing="length")


@pytest.mark.parametrize(
    ("kwargs", "place", "rule"),
    [
        ({"prompt": {"id": "pmpt_1", "variables": {"x_acme_lookup_y": "Paris"}}}, "$.prompt.variables[<key>]", "literal"),
        ({"prompt": {"id": "pmpt_1", "variables": {BOB: "Paris"}}}, "$.prompt.variables[<key>]", "EMAIL"),
        ({"input": "hi", "tools": [{"type": "mcp", "server_label": "crm", "server_url": "https://mcp.example",
                                    "headers": {"X-Acme Corp-Tenant": "1"}, "require_approval": "never"}]},
         "$.tools[0].headers[<key>]", "literal"),
    ],
)  # fmt: skip
def test_an_original_in_a_name_sent_as_written_is_refused_and_nothing_leaves(
    proxy: Proxy, kwargs: dict, place: str, rule: str
) -> None:
    proxy.upstream.on("scn-names", lambda rec: _answer("ok"))
    before = len(proxy.upstream.requests)
    with _client(proxy) as client, pytest.raises(openai.BadRequestError) as exc:
        client.responses.create(model="scn-names", **kwargs)
    msg = exc.value.message
    assert exc.value.status_code == 400
    assert "request refused by the leak guard" in msg, msg
    assert f"{rule} in body {place} (a key sent as written, a name the API matches: rename it)" in msg, msg
    assert not any(o in msg for o in ORIGINALS), msg
    assert len(proxy.upstream.requests) == before, "the refused request reached upstream"
    assert not any(o in proxy.mitm.output for o in ORIGINALS)


def test_a_clean_variable_name_goes_out_as_written_and_its_value_masked(proxy: Proxy) -> None:
    proxy.upstream.on("scn-names", lambda rec: _answer("Zenith Labs says hi"))
    with _client(proxy) as client:
        r = client.responses.create(model="scn-names", prompt={"id": "pmpt_1", "variables": {"customer": "Acme Corp"}})
    assert r.output_text == "Acme Corp says hi"
    sent = proxy.upstream.requests[-1].json
    assert sent["prompt"]["variables"] == {"customer": "Zenith Labs"}
