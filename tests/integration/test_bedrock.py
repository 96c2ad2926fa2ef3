"""End to end, AWS Bedrock: boto3's `bedrock-runtime` client and the anthropic SDK's
AnthropicBedrock -> mitmdump running the addon (disguise_aws_resign) -> a fake Bedrock.

The fake Bedrock checks the SigV4 signature of every request it receives with the
credentials it was given, botocore computing the expected signature, and answers 403 as
AWS does on a mismatch. The clients sign with their own keys (CLIENTS: long-term keys,
and temporary credentials whose session token has the shape STS issues, as SSO, assumed
roles and instance roles give: every test runs with both) and the fake accepts only the
proxy's (PROXY, temporary credentials too, given to mitmdump through its environment):
every answered request was masked and then signed again by the proxy, for the host it
actually went to. The shipped patterns are in force (AWS_SESSION_TOKEN among them): the
client's token in x-amz-security-token is its credential in its slot, not a leak.

Answers are real recordings: ConverseStream event streams from Bedrock (fixtures/real/
bedrock, frames re-encoded where a test edits a payload) and the Anthropic streams that
InvokeModelWithResponseStream wraps in `chunk` frames.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from aws_util import (
    TEXT_AT,
    check_sigv4,
    chunk_frame,
    chunks_with,
    converse_frame,
    family_fixture,
    frames_of,
    get,
    images_of,
    inject,
)
from integration_util import (
    MITMDUMP,
    FakeUpstream,
    Mitmdump,
    Recorded,
    Reply,
    clean_env,
    cut,
    http_post,
    mitmdump_cmd,
    split_events,
    write_mappings,
)

boto3 = pytest.importorskip("boto3")
anthropic = pytest.importorskip("anthropic")
from botocore.config import Config  # noqa: E402
from botocore.credentials import ReadOnlyCredentials  # noqa: E402
from botocore.exceptions import ClientError, EventStreamError  # noqa: E402

from disguiselib.apis.bedrock import models as bedrock_models  # noqa: E402
from disguiselib.apis.bedrock.chunks import is_last  # noqa: E402
from disguiselib.wire import eventstream  # noqa: E402

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "real"
EMAIL_RX = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"
WINQ = 'C:\\Users\\"acme"'  # backslashes and quotes: JSON-escaped wherever it lands
LITERALS = {"Acme Corp": "Zenith Labs", "session_id": "thread_id", "acme_lookup": "crm_lookup", WINQ: "WINPATH"}
MAPPINGS = {"literals": LITERALS, "patterns": [{"name": "EMAIL", "regex": EMAIL_RX}]}
BOB = "bob@corp.example.com"
ORIGINALS = [*LITERALS, BOB]
PH = re.compile(r"\[EMAIL_[0-9]+\]")

# An STS session token begins with the base64 of its version header (`IQoJb3JpZ2luX2Vj`).
STS_TOKEN = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD" + "bG9uZ3Rva2VuRVhBTVBMRQ" * 12
CLIENTS = {
    "long-term": ReadOnlyCredentials("AKIACLIENTEXAMPLE1Z", "client/secret/key/EXAMPLE", None),
    "temporary": ReadOnlyCredentials("ASIACLIENTEXAMPLE2Z", "client/temp/secret/EXAMPLE", STS_TOKEN + "Q2xpZW50"),
}
CLIENT = CLIENTS["long-term"]
PROXY = ReadOnlyCredentials("ASIAPROXYEXAMPLE22Z", "proxy/secret/key/EXAMPLE", STS_TOKEN + "UHJveHk")
REGION = "us-east-1"
MODEL = "anthropic.claude-sonnet-4-20250514-v1:0"
JSON_HEADERS = {"Content-Type": "application/json"}
ES_HEADERS = {"Content-Type": "application/vnd.amazon.eventstream"}


def aws_env(with_credentials: bool) -> dict[str, str]:
    """mitmdump's environment: the proxy's credentials (or none at all: no files, no
    instance metadata)."""
    env = {k: v for k, v in clean_env().items() if not k.startswith("AWS_")}
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env["AWS_CONFIG_FILE"] = env["AWS_SHARED_CREDENTIALS_FILE"] = "/nonexistent/disguise-test"
    if with_credentials:
        env.update(AWS_ACCESS_KEY_ID=PROXY.access_key, AWS_SECRET_ACCESS_KEY=PROXY.secret_key,
                   AWS_SESSION_TOKEN=PROXY.token)  # fmt: skip
    return env


class Proxy:
    def __init__(self, upstream: FakeUpstream, mitm: Mitmdump, client: ReadOnlyCredentials = CLIENT) -> None:
        self.client = client
        self.upstream = upstream
        self.mitm = mitm
        self.base_url = f"http://127.0.0.1:{mitm.port}"
        self.rejected: list[str] = []
        self._boto = None

    def on(self, path: str, handler) -> None:
        """Answer path (as the client sends it) after checking the SigV4 signature."""

        def verified(rec: Recorded) -> Reply:
            url = f"http://{rec.headers['host']}{rec.path}"
            why = check_sigv4(rec.method, url, rec.headers, rec.raw, PROXY)
            if why is not None:
                self.rejected.append(why)
                return Reply([json.dumps({"message": why}).encode()], status=403, framing="length",
                             headers={**JSON_HEADERS, "x-amzn-ErrorType": "InvalidSignatureException:http://internal.amazon.com/coral/com.amazon.coral.service/"})  # fmt: skip
            return handler(rec)

        self.upstream.on(path, verified)

    def boto(self):
        if self._boto is None:
            self._boto = self._client()
        return self._boto

    def close(self) -> None:
        if self._boto is not None:
            self._boto.close()
        self.mitm.stop()

    def _client(self):
        return boto3.client(
            "bedrock-runtime", region_name=REGION, endpoint_url=self.base_url,
            aws_access_key_id=self.client.access_key, aws_secret_access_key=self.client.secret_key,
            aws_session_token=self.client.token,
            config=Config(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=30, connect_timeout=10),
        )  # fmt: skip

    def anthropic(self):
        return anthropic.AnthropicBedrock(
            aws_access_key=self.client.access_key, aws_secret_key=self.client.secret_key, aws_region=REGION,
            aws_session_token=self.client.token,
            base_url=self.base_url, max_retries=0,
        )  # fmt: skip


def _start(tmp: Path, upstream: FakeUpstream, *extra: str, creds: bool = True) -> Mitmdump:
    tmp.mkdir(parents=True, exist_ok=True)
    cmd = mitmdump_cmd(upstream.port, tmp / "conf", write_mappings(tmp, MAPPINGS), *extra)
    return Mitmdump(cmd, env=aws_env(creds))


@pytest.fixture(scope="module", params=sorted(CLIENTS))
def proxy(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Proxy]:
    """A proxy that re-signs, and clients signing with long-term keys or temporary
    credentials (their session token in x-amz-security-token)."""
    tmp = tmp_path_factory.mktemp("disguise-bedrock")
    with FakeUpstream() as upstream:
        p = Proxy(upstream, _start(tmp, upstream, "--set", "disguise_aws_resign=true"), CLIENTS[request.param])
        try:
            yield p
        finally:
            p.close()


def path(model: str, op: str, anthropic_sdk: bool = False) -> str:
    """The request path each client sends: boto3 percent-encodes `:`, AnthropicBedrock not."""
    return f"/model/{model if anthropic_sdk else model.replace(':', '%3A')}/{op}"


def assert_masked(rec: Recorded, keep: tuple[str, ...] = ()) -> None:
    text = rec.body.decode("utf-8")
    for k in keep:
        text = text.replace(k, "")
    for o in ORIGINALS:
        for form in (o, json.dumps(o)[1:-1]):
            assert form not in text, f"{o!r} reached the fake Bedrock"


def placeholder(rec: Recorded) -> str:
    found = PH.findall(rec.body.decode())
    assert found, "no placeholder went upstream"
    return found[0]


def messages_body(**extra) -> dict:
    return {
        "anthropic_version": "bedrock-2023-05-31", "max_tokens": 200,
        "messages": [{"role": "user", "content": f"Ask Acme Corp about {BOB}, path {WINQ}"}],
        "tools": [{"name": "acme_lookup", "description": "Looks things up at Acme Corp",
                   "input_schema": {"type": "object", "properties": {"session_id": {"type": "string"}}}}],
        **extra,
    }  # fmt: skip


# -- the recorded Anthropic stream, in Bedrock chunks --------------------------------------------


def sse_datas(name: str) -> list[str]:
    """The `data:` JSON of each event of a recorded Anthropic stream, as recorded."""
    out = []
    for raw in split_events((FIX / "anthropic" / name).read_bytes()):
        for line in raw.decode().split("\n"):
            if line.startswith("data: "):
                out.append(line[6:])
    return out


def tool_stream_chunks(ph: str) -> list[bytes]:
    """stream_parallel_tool_use.sse with a disguise split across two frames in the text,
    the tool renamed to its disguise and its input (a disguised key, a value whose
    original needs JSON escaping) split across frames."""
    datas = sse_datas("stream_parallel_tool_use.sse")
    text = iter(["I'll ask Zen", "ith Labs about ", ph, " now."])
    args = iter(['{"thread_id": "WIN', 'PATH", "who": "', ph, '"}'])
    out = []
    block_tools = 0
    for d in datas:
        ev = json.loads(d)
        t = ev["type"]
        if t == "content_block_delta" and ev["delta"]["type"] == "text_delta":
            ev["delta"]["text"] = next(text, "")
            d = json.dumps(ev)
        elif t == "content_block_start" and ev["content_block"]["type"] == "tool_use":
            block_tools += 1
            d = d.replace("secret_retrieval_tool", "crm_lookup")
        elif t == "content_block_delta" and ev["delta"]["type"] == "input_json_delta":
            ev["delta"]["partial_json"] = next(args, "") if block_tools == 1 else ev["delta"]["partial_json"]
            d = json.dumps(ev)
        if t == "message_stop":
            ev["amazon-bedrock-invocationMetrics"] = {"inputTokenCount": 416, "outputTokenCount": 99}
            d = json.dumps(ev)
        out.append(chunk_frame(d))
    assert next(text, None) is None and next(args, None) is None
    return out


def expected_tool_input(first_tool_input_json: str) -> None:
    assert json.loads(first_tool_input_json) == {"session_id": WINQ, "who": BOB}


# -- InvokeModel ------------------------------------------------------------------------------


def test_invoke_whole_boto3(proxy: Proxy) -> None:
    p = path("anthropic.claude-whole-v1:0", "invoke")

    def answer(rec: Recorded) -> Reply:
        assert_masked(rec)
        ph = placeholder(rec)
        msg = json.loads((FIX / "anthropic" / "message_tool_use.json").read_text())
        msg["content"][0]["text"] = f"Zenith Labs has {ph}"
        msg["content"][1]["name"] = "crm_lookup"
        msg["content"][1]["input"] = {"thread_id": "WINPATH"}
        return Reply([json.dumps(msg).encode()], headers=JSON_HEADERS, framing="length")

    proxy.on(p, answer)
    resp = proxy.boto().invoke_model(modelId="anthropic.claude-whole-v1:0", body=json.dumps(messages_body()))
    msg = json.loads(resp["body"].read())
    assert msg["content"][0]["text"] == f"Acme Corp has {BOB}"
    assert msg["content"][1]["name"] == "acme_lookup"
    assert msg["content"][1]["input"] == {"session_id": WINQ}
    rec = proxy.upstream.for_path(p)[-1]
    assert rec.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={PROXY.access_key}/")
    assert "/us-east-1/bedrock/aws4_request" in rec.headers["authorization"]
    # the client's session token (in its slot: not refused) replaced by the proxy's
    assert rec.headers.get("x-amz-security-token") == PROXY.token
    if proxy.client.token:
        assert proxy.client.token not in json.dumps(rec.headers) + rec.body.decode()


@pytest.mark.parametrize("seed", [1, 2])
def test_invoke_stream_anthropic_sdk(proxy: Proxy, seed: int) -> None:
    model = f"anthropic.claude-stream{seed}-v1:0"
    p = path(model, "invoke-with-response-stream", anthropic_sdk=True)
    proxy.on(p, lambda rec: (assert_masked(rec), Reply(cut(tool_stream_chunks(placeholder(rec)), seed),
                                                        headers=ES_HEADERS))[1])  # fmt: skip
    body = messages_body()
    with proxy.anthropic() as client, client.messages.stream(
        model=model, max_tokens=200, messages=body["messages"], tools=body["tools"]
    ) as s:
        deltas = [e.delta.text for e in s if e.type == "content_block_delta" and e.delta.type == "text_delta"]
        final = s.get_final_message()
    assert "".join(deltas) == f"I'll ask Acme Corp about {BOB} now."
    assert final.content[0].text == f"I'll ask Acme Corp about {BOB} now."
    assert final.content[1].name == "acme_lookup"
    assert final.content[1].input == {"session_id": WINQ, "who": BOB}


def test_invoke_stream_boto3_frames_valid(proxy: Proxy) -> None:
    model = "anthropic.claude-stream-boto-v1:0"
    p = path(model, "invoke-with-response-stream")
    proxy.on(p, lambda rec: Reply(cut(tool_stream_chunks(placeholder(rec)), 7), headers=ES_HEADERS))
    resp = proxy.boto().invoke_model_with_response_stream(modelId=model, body=json.dumps(messages_body()))
    events = [json.loads(e["chunk"]["bytes"]) for e in resp["body"]]  # botocore checks every CRC
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta"
                   and e["delta"]["type"] == "text_delta")  # fmt: skip
    assert text == f"I'll ask Acme Corp about {BOB} now."
    args = "".join(e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta"
                   and e["delta"]["type"] == "input_json_delta" and e["index"] == 1)  # fmt: skip
    expected_tool_input(args)
    assert events[-1]["type"] == "message_stop"
    assert events[-1]["amazon-bedrock-invocationMetrics"]["inputTokenCount"] == 416


def test_invoke_stream_thinking_untouched(proxy: Proxy) -> None:
    """A recorded thinking stream: thinking and signature pass byte-identical even where
    the thinking holds a disguise; the text after it is restored."""
    model = "anthropic.claude-think-v1:0"
    p = path(model, "invoke-with-response-stream")
    datas = sse_datas("stream_thinking.sse")
    sent: list[bytes] = []
    for d in datas:
        ev = json.loads(d)
        if ev["type"] == "content_block_delta" and ev["delta"]["type"] == "thinking_delta":
            ev["delta"]["thinking"] += " Zenith Labs"
            d = json.dumps(ev)
        elif ev["type"] == "content_block_delta" and ev["delta"]["type"] == "text_delta":
            ev["delta"]["text"] = "Zenith Labs! "
            d = json.dumps(ev)
        sent.append(chunk_frame(d))
    proxy.on(p, lambda rec: Reply(sent, headers=ES_HEADERS))
    resp = proxy.boto().invoke_model_with_response_stream(modelId=model, body=json.dumps(messages_body()))
    got = [e["chunk"]["bytes"] for e in resp["body"]]
    up = [base64.b64decode(json.loads(fr.payload)["bytes"]) for fr in frames_of(b"".join(sent))]
    for raw in up:
        if b"thinking_delta" in raw or b"signature_delta" in raw:
            assert raw in got, "a thinking or signature delta changed"
    texts = [json.loads(g)["delta"].get("text") for g in got if b"text_delta" in g]
    assert "".join(t for t in texts if t) == "Acme Corp! " * len([1 for r in up if b"text_delta" in r])


# -- InvokeModel for every other model family (fixtures/real/bedrock/models) --------------------

FAMILY_FIXTURES = sorted(TEXT_AT)


def family_request(name: str) -> dict:
    """The family's documented request with originals in every text it holds."""
    return inject(family_fixture(name)["request"], f" Acme Corp {BOB}")  # type: ignore[return-value]


NO_STREAM_FIXTURES = ["ai21.j2", "amazon.titan-embed", "cohere.embed", "amazon.titan-embed-image", "amazon.titan-image",
                      "amazon.titan-image.inpainting", "stability.sd3", "stability.sdxl", "cohere.rerank",
                      "cohere.rerank.documents", "amazon.nova-embed"]  # fmt: skip


@pytest.mark.parametrize("name", [*FAMILY_FIXTURES, *NO_STREAM_FIXTURES])
def test_invoke_family_whole(proxy: Proxy, name: str) -> None:
    """Each family's documented body masked on the way out; its documented answer, with
    a disguise in every text, restored on the way back (an image, request or answer,
    passed byte for byte; rerank's echoed documents restored)."""
    f = family_fixture(name)
    p = path(f["model"], "invoke")

    def answer(rec: Recorded) -> Reply:
        assert_masked(rec)
        assert images_of(json.loads(rec.body)) == images_of(f["request"])  # bytes, as they were
        body = inject(f["response"], f" Zenith Labs {placeholder(rec)}")
        return Reply([json.dumps(body).encode()], headers=JSON_HEADERS, framing="length")

    proxy.on(p, answer)
    resp = proxy.boto().invoke_model(modelId=f["model"], body=json.dumps(family_request(name)))
    assert json.loads(resp["body"].read()) == inject(f["response"], f" Acme Corp {BOB}")


@pytest.mark.parametrize("name", FAMILY_FIXTURES)
def test_invoke_family_stream(proxy: Proxy, name: str) -> None:
    """Each family's documented chunks with its text split inside both disguises, in
    frames cut at arbitrary bytes: the text restored, the stream complete (no exception
    frame: a Llama stream once ended 'before message_stop'), no text after its last chunk."""
    f = family_fixture(name)
    p = path(f["model"], "invoke-with-response-stream")

    def answer(rec: Recorded) -> Reply:
        assert_masked(rec)
        ph = placeholder(rec)
        pieces = ["Ask Zen", "ith Labs: ", ph[:4], ph[4:], " now, Zen"]  # "Zen": held to the end
        return Reply(cut([chunk_frame(c) for c in chunks_with(name, pieces)], 5), headers=ES_HEADERS)

    proxy.on(p, answer)
    resp = proxy.boto().invoke_model_with_response_stream(modelId=f["model"], body=json.dumps(family_request(name)))
    chunks = [json.loads(e["chunk"]["bytes"]) for e in resp["body"]]  # an exception frame raises here
    at = TEXT_AT[name]
    texts = [get(c, at) for c in chunks]
    assert "".join(t for t in texts if isinstance(t, str)) == f"Ask Acme Corp: {BOB} now, Zen"
    model = bedrock_models.family_of(f["model"]).chunk  # type: ignore[union-attr]
    last = max(i for i, c in enumerate(chunks) if is_last(model, c))
    assert not any(isinstance(t, str) and t for t in texts[last + 1 :])


@pytest.mark.parametrize("name", ["amazon.titan-image", "cohere.rerank.documents"])
def test_invoke_stream_of_a_model_that_does_not_stream(proxy: Proxy, name: str) -> None:
    """Image and rerank models do not stream: the request is masked as the family's, and
    an event stream answered anyway ends with an exception frame, its chunk not read as
    another family's (the disguise in it never reaches the client as if restored)."""
    f = family_fixture(name)
    p = path(f["model"], "invoke-with-response-stream")

    def answer(rec: Recorded) -> Reply:
        assert_masked(rec)
        body = inject(f["response"], f" Zenith Labs {placeholder(rec)}")
        return Reply([chunk_frame(body)], headers=ES_HEADERS)

    proxy.on(p, answer)
    resp = proxy.boto().invoke_model_with_response_stream(modelId=f["model"], body=json.dumps(family_request(name)))
    with pytest.raises(EventStreamError) as e:
        try:
            list(resp["body"])
        finally:
            resp["body"].close()
    assert "does not stream" in str(e.value)


@pytest.mark.parametrize(
    ("model", "prefix"),
    [("luma.ray-v2:0", "luma.ray"),
     ("arn:aws:bedrock:us-east-1:123456789012:imported-model/acme-corp-x", "imported-model")],
)  # fmt: skip
def test_invoke_unknown_family_refused(proxy: Proxy, model: str, prefix: str) -> None:
    """A model whose body no family declares is refused before anything leaves, the
    message naming its family prefix and nothing of the body."""
    for op in ("invoke_model", "invoke_model_with_response_stream"):
        with pytest.raises(ClientError) as e:
            getattr(proxy.boto(), op)(modelId=model, body=json.dumps({"prompt": f"Acme Corp {BOB}"}))
        msg = str(e.value)
        assert repr(prefix) in msg and "Acme" not in msg and BOB not in msg, msg
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert not [r for r in proxy.upstream.requests if model.split(":")[0].split("/")[0] in r.path]


@pytest.fixture(scope="module")
def own_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    """A proxy of its own: mitmdump's line for a flow shows its URL, which the shared
    proxy's log-clean test would count (not disguise's line to change)."""
    tmp = tmp_path_factory.mktemp("disguise-bedrock-own-log")
    with FakeUpstream() as upstream:
        p = Proxy(upstream, _start(tmp, upstream, "--set", "disguise_aws_resign=true"))
        try:
            yield p
        finally:
            p.close()


@pytest.mark.parametrize(
    "model",
    ["acme_lookup.model-v1", "arn:aws:bedrock:us-east-1:123456789012:foundation-model/acme_lookup-v1"],
)  # fmt: skip
def test_invoke_unknown_family_that_is_an_original_is_not_named(own_log: Proxy, model: str) -> None:
    """The model id is the client's text: a family that holds an original is withheld in
    the refusal and in disguise's own log line."""
    with pytest.raises(ClientError) as e:
        own_log.boto().invoke_model(modelId=model, body=json.dumps({"prompt": "hi"}))
    msg = str(e.value)
    assert "model family <original> is not one" in msg and "acme_lookup" not in msg, msg
    assert own_log.mitm.saw("model family <original> is not one")
    assert not [ln for ln in own_log.mitm.output.splitlines() if "disguise" in ln and "acme_lookup" in ln]


# -- Converse ---------------------------------------------------------------------------------


def test_converse_whole_recorded(proxy: Proxy) -> None:
    """The recorded Converse request (a signed reasoning block, a tool round trip) with
    originals in it; the recorded answer with disguises in it."""
    model = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"
    p = path(model, "converse")
    req = json.loads((FIX / "bedrock" / "converse_tool_result_thinking.request.json").read_bytes())
    req["messages"][0]["content"][0]["text"] = f"What is the largest city where Acme Corp ({BOB}) is?"
    req["messages"][1]["content"][2]["toolUse"]["name"] = "acme_lookup"
    req["toolConfig"]["tools"][0]["toolSpec"]["name"] = "acme_lookup"
    req["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["properties"] = {"session_id": {"type": "string"}}
    signed = req["messages"][1]["content"][0]["reasoningContent"]

    def answer(rec: Recorded) -> Reply:
        assert_masked(rec)
        assert json.loads(rec.body)["messages"][1]["content"][0]["reasoningContent"] == signed
        out = json.loads((FIX / "bedrock" / "converse_tool_result_thinking.json").read_bytes())
        out["output"]["message"]["content"][0]["text"] = f"Zenith Labs is in Mexico City; {placeholder(rec)}."
        out["output"]["message"]["content"].append(
            {"toolUse": {"toolUseId": "tooluse_1", "name": "crm_lookup", "input": {"thread_id": "WINPATH"}}})
        return Reply([json.dumps(out).encode()], headers=JSON_HEADERS, framing="length")

    proxy.on(p, answer)
    out = proxy.boto().converse(modelId=model, **{k: v for k, v in req.items()})
    content = out["output"]["message"]["content"]
    assert content[0]["text"] == f"Acme Corp is in Mexico City; {BOB}."
    assert content[1]["toolUse"]["name"] == "acme_lookup"
    assert content[1]["toolUse"]["input"] == {"session_id": WINQ}


def converse_tool_stream(ph: str) -> list[bytes]:
    """The recorded ConverseStream (text, then a toolUse block) with a disguise split
    across two text frames, the tool renamed and its input split across frames."""
    frames = frames_of((FIX / "bedrock" / "converse_stream_tool_use.eventstream").read_bytes())
    text = iter(["I'll ask Zen", "ith Labs about ", ph, "."])
    out = []
    for fr in frames:
        payload = json.loads(fr.payload)
        if fr.event_type == "contentBlockDelta" and "text" in payload["delta"]:
            payload["delta"]["text"] = next(text, "")
        elif fr.event_type == "contentBlockStart":
            payload["start"]["toolUse"]["name"] = "crm_lookup"
        elif fr.event_type == "contentBlockDelta" and "toolUse" in payload["delta"]:
            for piece in ('{"thread_id": "WIN', 'PATH", "who": "', ph, '"}'):
                out.append(eventstream.reframe(fr.header_block, json.dumps(
                    {"contentBlockIndex": 1, "delta": {"toolUse": {"input": piece}}, "p": "abc"}).encode()))
            continue
        out.append(eventstream.reframe(fr.header_block, json.dumps(payload).encode()))
    return out


def test_converse_stream_boto3(proxy: Proxy) -> None:
    model = "us.amazon.nova-micro-v1:0"
    p = path(model, "converse-stream")
    req = json.loads((FIX / "bedrock" / "converse_stream_tool_use.request.json").read_bytes())
    req["messages"][0]["content"][0]["text"] = f"Ask Acme Corp about {BOB}"
    req["toolConfig"]["tools"][1]["toolSpec"]["name"] = "acme_lookup"
    proxy.on(p, lambda rec: (assert_masked(rec), Reply(cut(converse_tool_stream(placeholder(rec)), 3),
                                                        headers=ES_HEADERS))[1])  # fmt: skip
    resp = proxy.boto().converse_stream(modelId=model, **req)
    text, args, name, stop = [], [], None, None
    for e in resp["stream"]:
        if "contentBlockDelta" in e:
            d = e["contentBlockDelta"]["delta"]
            text.append(d.get("text", ""))
            args.append(d.get("toolUse", {}).get("input", ""))
        elif "contentBlockStart" in e:
            name = e["contentBlockStart"]["start"]["toolUse"]["name"]
        elif "messageStop" in e:
            stop = e["messageStop"]["stopReason"]
    assert "".join(text) == f"I'll ask Acme Corp about {BOB}."
    assert name == "acme_lookup"
    expected_tool_input("".join(args))
    assert stop == "tool_use"


def test_converse_stream_thinking_recorded(proxy: Proxy) -> None:
    """Recorded Claude reasoning: reasoningContent deltas and the signature reach the
    client byte-identical, even one holding a disguise; the text block is restored."""
    model = "us.anthropic.claude-sonnet-4-20250514-v1:0"
    p = path(model, "converse-stream")
    frames = frames_of((FIX / "bedrock" / "converse_stream_thinking.eventstream").read_bytes())
    sent = []
    for fr in frames:
        payload = json.loads(fr.payload)
        d = payload.get("delta", {})
        if "reasoningContent" in d and "text" in d["reasoningContent"] and not sent[-1:] == ["r"]:
            d["reasoningContent"]["text"] += " Zenith Labs"
            sent.append(eventstream.reframe(fr.header_block, json.dumps(payload).encode()))
        elif "text" in d and d["text"].startswith("Hello"):
            d["text"] = "Hello from Zenith"
            sent.append(eventstream.reframe(fr.header_block, json.dumps(payload).encode()))
        elif "text" in d and d["text"] == "'s nice":
            d["text"] = " Labs!"
            sent.append(eventstream.reframe(fr.header_block, json.dumps(payload).encode()))
        else:
            sent.append(fr.raw)
    proxy.on(p, lambda rec: Reply(cut(sent, 5), headers=ES_HEADERS))
    req = json.loads((FIX / "bedrock" / "converse_stream_thinking.request.json").read_bytes())
    resp = proxy.boto().converse_stream(modelId=model, **req)
    reasoning, text = [], []
    for e in resp["stream"]:
        d = e.get("contentBlockDelta", {}).get("delta", {})
        if "reasoningContent" in d:
            reasoning.append(d["reasoningContent"])
        elif "text" in d:
            text.append(d["text"])
    up = [json.loads(fr.payload)["delta"]["reasoningContent"] for fr in frames_of(b"".join(sent))
          if b"reasoningContent" in fr.payload]  # fmt: skip
    assert reasoning == up  # text and signature, as they came (disguise included)
    assert "Zenith Labs" in "".join(r.get("text", "") for r in reasoning)
    assert "".join(text).startswith("Hello from Acme Corp!")


def test_count_tokens_converse(proxy: Proxy) -> None:
    model = "anthropic.claude-sonnet-4-20250514-v1:0"
    p = path(model, "count-tokens")
    req = json.loads((FIX / "bedrock" / "count_tokens_converse.request.json").read_bytes())
    req["input"]["converse"]["messages"][0]["content"][0]["text"] = f"Weather at Acme Corp for {BOB}?"

    def answer(rec: Recorded) -> Reply:
        assert_masked(rec)
        return Reply([(FIX / "bedrock" / "count_tokens_converse.json").read_bytes()], headers=JSON_HEADERS,
                     framing="length")  # fmt: skip

    proxy.on(p, answer)
    assert proxy.boto().count_tokens(modelId=model, input=req["input"])["inputTokens"] == 375
    with pytest.raises(ClientError) as e:
        proxy.boto().count_tokens(modelId=model, input={"invokeModel": {"body": json.dumps(messages_body())}})
    assert "input.converse" in str(e.value)


def test_inference_profile_arn(proxy: Proxy) -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/mi1dadi0g15f"
    p = "/model/" + arn.replace(":", "%3A").replace("/", "%2F") + "/converse"
    proxy.on(p, lambda rec: (assert_masked(rec), Reply([(FIX / "bedrock" / "converse_inference_profile.json")
                             .read_bytes().replace(b"Hello", b"Hello Zenith Labs")], headers=JSON_HEADERS,
                             framing="length"))[1])  # fmt: skip
    out = proxy.boto().converse(modelId=arn, messages=[{"role": "user", "content": [{"text": "Say Acme Corp"}]}])
    assert out["output"]["message"]["content"][0]["text"] == "Hello Acme Corp"
    assert proxy.upstream.for_path(p)


# -- failures: each ends explicitly ------------------------------------------------------------


def converse_until_error(proxy: Proxy, model: str) -> tuple[list[str], pytest.ExceptionInfo]:
    """A ConverseStream through the proxy that must end in EventStreamError: the text
    boto3 read before it, and the error."""
    text: list[str] = []
    stream = proxy.boto().converse_stream(modelId=model, messages=[
        {"role": "user", "content": [{"text": f"Ask Acme Corp about {BOB}"}]}])["stream"]  # fmt: skip
    with pytest.raises(EventStreamError) as e:
        try:
            for ev in stream:
                text.append(ev.get("contentBlockDelta", {}).get("delta", {}).get("text", ""))
        finally:
            stream.close()
    return text, e


@pytest.mark.parametrize("how", ["cut", "crc"])
def test_stream_cut_or_corrupt_ends_with_exception(proxy: Proxy, how: str) -> None:
    model = f"us.amazon.nova-{how}-v1:0"
    p = path(model, "converse-stream")

    def answer(rec: Recorded) -> Reply:
        frames = converse_tool_stream(placeholder(rec))
        if how == "cut":
            # "...Zen" went out, then half a frame, and the body ends
            return Reply([*frames[:3], frames[3][: len(frames[3]) // 2]], headers=ES_HEADERS)
        bad = bytearray(frames[3])
        bad[-10] ^= 0x01  # a payload byte: the message CRC no longer matches
        return Reply([*frames[:3], bytes(bad), *frames[4:]], headers=ES_HEADERS)

    proxy.on(p, answer)
    text, e = converse_until_error(proxy, model)
    assert e.value.response["Error"]["Code"] == "internalServerException"
    assert "disguise" in e.value.response["Error"]["Message"]
    assert "Zen" not in "".join(text) or "Acme Corp" in "".join(text)


def test_upstream_error_frame_restored_after_the_held_tail(proxy: Proxy) -> None:
    """An error frame (`:message-type error`: its text in the `:error-code` and
    `:error-message` headers) after "I'll ask Zen": boto3 gets the held "Zen", then raises
    EventStreamError with the message restored."""
    model = "us.amazon.nova-errframe-v1:0"
    p = path(model, "converse-stream")

    def answer(rec: Recorded) -> Reply:
        ph = placeholder(rec)
        err = eventstream.encode([(":message-type", "error"), (":error-code", "ValidationException"),
                                  (":error-message", f"input about Zenith Labs and {ph} rejected")], b"")  # fmt: skip
        return Reply([*converse_tool_stream(ph)[:2], err], headers=ES_HEADERS)

    proxy.on(p, answer)
    text, e = converse_until_error(proxy, model)
    assert e.value.response["Error"] == {"Code": "ValidationException",
                                         "Message": f"input about Acme Corp and {BOB} rejected"}  # fmt: skip
    assert "".join(text) == "I'll ask Zen"


def test_connection_dropped_mid_frame_is_an_error(proxy: Proxy) -> None:
    """Upstream drops the connection inside a frame: mitmproxy drops the client's too
    (nothing can be written after it), so the client gets a connection error, never a
    stream that looks complete; what it had is restored."""
    model = "us.amazon.nova-drop-v1:0"
    p = path(model, "converse-stream")
    proxy.on(p, lambda rec: (lambda f: Reply([*f[:3], f[3][: len(f[3]) // 2]], headers=ES_HEADERS, abort=True))(
        converse_tool_stream(placeholder(rec))))  # fmt: skip
    text = []
    stream = proxy.boto().converse_stream(modelId=model, messages=[
        {"role": "user", "content": [{"text": f"Ask Acme Corp about {BOB}"}]}])["stream"]  # fmt: skip
    with pytest.raises(Exception) as e:  # noqa: B017,PT011
        try:
            for ev in stream:
                text.append(ev.get("contentBlockDelta", {}).get("delta", {}).get("text", ""))
        finally:
            stream.close()
    assert type(e.value).__name__ in ("ProtocolError", "ResponseStreamingError", "EventStreamError"), e.value
    assert "".join(text) == "I'll ask Acme Corp about "


def test_invoke_stream_cut_anthropic_sdk_raises(proxy: Proxy) -> None:
    model = "anthropic.claude-cut-v1:0"
    p = path(model, "invoke-with-response-stream", anthropic_sdk=True)
    proxy.on(p, lambda rec: Reply(tool_stream_chunks(placeholder(rec))[:6], headers=ES_HEADERS))
    body = messages_body()
    with pytest.raises(Exception) as e:  # noqa: B017,PT011 - the SDK raises a plain error for an exception frame
        with proxy.anthropic() as client, client.messages.stream(
            model=model, max_tokens=200, messages=body["messages"]
        ) as s:
            for _ in s:
                pass
    assert "internalServerException" in str(e.value) or "disguise" in str(e.value)


@pytest.fixture(scope="module")
def refusing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Proxy, Proxy]]:
    """Two proxies that must refuse: the option off; the option on without credentials."""
    tmp = tmp_path_factory.mktemp("disguise-bedrock-off")
    with FakeUpstream() as upstream:
        off = Proxy(upstream, _start(tmp / "a", upstream))
        try:
            none = Proxy(upstream, _start(tmp / "b", upstream, "--set", "disguise_aws_resign=true", creds=False))
            try:
                yield off, none
            finally:
                none.close()
        finally:
            off.close()


@pytest.mark.parametrize("which", ["off", "no credentials"])
def test_refused_and_says_what_is_missing(refusing: tuple[Proxy, Proxy], which: str) -> None:
    p = refusing[0] if which == "off" else refusing[1]
    with pytest.raises(ClientError) as e:
        p.boto().converse(modelId=MODEL, messages=[{"role": "user", "content": [{"text": "Acme Corp"}]}])
    err = e.value.response["Error"]
    assert err["Code"] == "ValidationException"
    if which == "off":
        assert "disguise_aws_resign is off" in err["Message"]
    else:
        assert "no AWS credentials" in err["Message"]
    assert not p.upstream.requests, "a refused request reached Bedrock"


def test_bearer_api_key_is_masked_without_signing(proxy: Proxy) -> None:
    """A Bedrock API key (bearer) does not sign the body: masked, sent as it is."""
    p = path("anthropic.claude-bearer-v1:0", "invoke")
    proxy.upstream.on(p, lambda rec: (assert_masked(rec), Reply([json.dumps({
        "type": "message", "role": "assistant", "content": [{"type": "text", "text": "Zenith Labs"}]}).encode()],
        headers=JSON_HEADERS, framing="length"))[1])  # fmt: skip
    status, _, data = http_post(proxy.mitm.port, p, json.dumps(messages_body()).encode(),
                                {"authorization": "Bearer ABSKbedrockapikeyEXAMPLE"})  # fmt: skip
    assert status == 200 and json.loads(data)["content"][0]["text"] == "Acme Corp"
    assert proxy.upstream.for_path(p)[-1].headers["authorization"] == "Bearer ABSKbedrockapikeyEXAMPLE"


def test_every_signature_verified_and_log_clean(proxy: Proxy) -> None:
    test_invoke_whole_boto3(proxy)
    assert not proxy.rejected, proxy.rejected
    out = proxy.mitm.output
    for secret in (PROXY.secret_key, PROXY.token, proxy.client.secret_key, *filter(None, [proxy.client.token]),
                   PROXY.access_key, *ORIGINALS):
        assert secret not in out, "a credential or an original in the mitmdump log"
    for bad in ("Traceback", "Addon error", "has crashed", "internal error"):
        assert bad not in out, f"{bad!r} in the mitmdump log:\n{out}"


def _converse_ok() -> Reply:
    return Reply([json.dumps({"output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
                              "stopReason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                              "metrics": {"latencyMs": 1}}).encode()], headers=JSON_HEADERS, framing="length")  # fmt: skip


def test_session_token_anywhere_else_is_masked_or_refused(proxy: Proxy) -> None:
    """A session token in its slot (x-amz-security-token) is the client's credential; the
    same value in a message is masked, in another header refused (AWS_SESSION_TOKEN)."""
    p = path("anthropic.claude-elsewhere-v1:0", "converse")
    proxy.on(p, lambda rec: _converse_ok())
    proxy.boto().converse(modelId="anthropic.claude-elsewhere-v1:0",
                          messages=[{"role": "user", "content": [{"text": f"my token is {STS_TOKEN}"}]}])
    sent = proxy.upstream.for_path(p)[-1]
    assert STS_TOKEN not in sent.body.decode() and "[AWS_SESSION_TOKEN_" in sent.body.decode()
    n = len(proxy.upstream.for_path(p))
    status, _, data = http_post(proxy.mitm.port, p, json.dumps({"messages": []}).encode(),
                                {"authorization": "Bearer ABSKbedrockapikeyEXAMPLE", "x-note": STS_TOKEN})
    assert status == 400 and b"AWS_SESSION_TOKEN in header x-note" in data
    assert STS_TOKEN.encode() not in data
    assert len(proxy.upstream.for_path(p)) == n, "a refused request reached Bedrock"


def test_converse_request_metadata_keys_masked(proxy: Proxy) -> None:
    """requestMetadata's keys are the client's words (issue 26): masked like its values."""
    p = path("anthropic.claude-meta-v1:0", "converse")

    def answer(rec: Recorded) -> Reply:
        assert_masked(rec)
        meta = json.loads(rec.body)["requestMetadata"]
        assert set(meta) == {"Zenith Labs", "team"} and meta["team"] == "Zenith Labs"
        return _converse_ok()

    proxy.on(p, answer)
    resp = proxy.boto().converse(modelId="anthropic.claude-meta-v1:0",
                                 requestMetadata={"Acme Corp": "x", "team": "Acme Corp"},
                                 messages=[{"role": "user", "content": [{"text": "hi"}]}])
    assert resp["output"]["message"]["content"][0]["text"] == "ok"
    assert proxy.upstream.for_path(p), "not answered"


def test_share_of_a_recording_reads_the_event_streams(tmp_path: Path) -> None:
    """Issue D2: a session recorded with -w whose Bedrock streams carry an original from
    the provider (in an InvokeModel chunk's base64 bytes; split across two Converse
    frames) gets no shared copy; the same streams carrying disguises do."""
    import subprocess
    import sys

    from integration_util import REPO

    inv, conv = path(MODEL, "invoke-with-response-stream", True), path(MODEL, "converse-stream", True)

    def answers(a: str, b: str) -> dict[str, list[bytes]]:
        evs = [{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
               {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f"it is {a}{b}"}},
               {"type": "content_block_stop", "index": 0}, {"type": "message_stop"}]  # fmt: skip
        frames = [converse_frame("messageStart", {"role": "assistant"})]
        frames += [converse_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": t}}) for t in (a, b)]
        frames += [converse_frame("contentBlockStop", {"contentBlockIndex": 0}),
                   converse_frame("messageStop", {"stopReason": "end_turn"})]  # fmt: skip
        return {inv: [chunk_frame(e) for e in evs], conv: frames}

    for name, (a, b), code in (("leaky", ("Acme ", "Corp"), 1), ("clean", ("Zenith ", "Labs"), 0)):
        tmp = tmp_path / name
        flows = tmp / "session.flows"
        bodies = answers(a, b)
        with FakeUpstream() as up:
            for p, frames in bodies.items():
                up.on(p, lambda rec, frames=frames: Reply(frames, headers=ES_HEADERS))
            md = _start(tmp, up, "--set", "disguise_aws_resign=true", "-w", str(flows))
            try:
                for p in bodies:
                    req = messages_body() if p == inv else {"messages": [{"role": "user", "content": [{"text": "Acme Corp?"}]}]}
                    status, _, _ = http_post(md.port, p, json.dumps(req).encode(), {"authorization": "Bearer ABSKkeyEXAMPLE"})
                    assert status == 200, md.output
            finally:
                md.stop()
        out = tmp / "shared.flows"
        r = subprocess.run([sys.executable, "-m", "disguiselib", "share", str(flows), str(out), "--mappings",
                            str(tmp / "mappings.yaml")], cwd=REPO, capture_output=True, text=True, timeout=120,
                           env={"PYTHONPATH": "addon", "PATH": "/usr/bin:/bin"})  # fmt: skip
        assert r.returncode == code, r.stdout + r.stderr
        assert out.exists() == (code == 0)
        if code:
            assert r.stderr.count("LEAK shared") == 2 and "Acme" not in r.stdout + r.stderr
        else:
            assert "2 flows written" in r.stdout


# -- an answer asked for as JSON (structured outputs) ------------------------------------------
# Converse's `outputConfig.textFormat` (type json_schema, its schema JSON text in a string),
# and a Messages body's `output_config.format` in InvokeModel: the answer's text is JSON
# text, WINQ's backslashes and quotes JSON-escaped in it, so the client's json.loads reads it.

JSON_OUTPUT = {"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {
    "name": "acme_record", "schema": json.dumps({"type": "object", "properties": {"session_id": {"type": "string"}}})}}}}
JSON_WANT = {"session_id": "s-1", "path": WINQ, "who": BOB}


def _json_text(ph: str) -> str:
    return json.dumps({"thread_id": "s-1", "path": "WINPATH", "who": ph})


def _converse_json_request(rec: Recorded) -> str:
    """The masked Converse request's placeholder; it asked for JSON, its schema masked inside its string."""
    assert_masked(rec)
    fmt = json.loads(rec.body)["outputConfig"]["textFormat"]
    assert fmt["type"] == "json_schema" and "thread_id" in fmt["structure"]["jsonSchema"]["schema"]
    return placeholder(rec)


ASK_JSON = [{"role": "user", "content": [{"text": f"A record of Acme Corp for {BOB}, path {WINQ}"}]}]


def test_converse_json_answer_whole(proxy: Proxy) -> None:
    model = "us.anthropic.claude-json-v1:0"
    p = path(model, "converse")

    def answer(rec: Recorded) -> Reply:
        out = {"output": {"message": {"role": "assistant", "content": [{"text": _json_text(_converse_json_request(rec))}]}},
               "stopReason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
               "metrics": {"latencyMs": 1}}  # fmt: skip
        return Reply([json.dumps(out).encode()], headers=JSON_HEADERS, framing="length")

    proxy.on(p, answer)
    out = proxy.boto().converse(modelId=model, messages=ASK_JSON, outputConfig=JSON_OUTPUT)
    assert json.loads(out["output"]["message"]["content"][0]["text"]) == JSON_WANT


@pytest.mark.parametrize("step", [1, 4])
def test_converse_stream_json_answer(proxy: Proxy, step: int) -> None:
    """The text in `step`-character deltas, the frames cut anywhere: the deltas boto3 joins
    parse to the originals; a held tail drains as a text delta (not a toolUse input)."""
    model = f"us.anthropic.claude-json-stream{step}-v1:0"
    p = path(model, "converse-stream")

    def answer(rec: Recorded) -> Reply:
        text = _json_text(_converse_json_request(rec))
        frames = [converse_frame("messageStart", {"role": "assistant"})]
        frames += [converse_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": text[i : i + step]}})
                   for i in range(0, len(text), step)]  # fmt: skip
        frames += [converse_frame("contentBlockStop", {"contentBlockIndex": 0}),
                   converse_frame("messageStop", {"stopReason": "end_turn"}),
                   converse_frame("metadata", {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                                               "metrics": {"latencyMs": 1}})]  # fmt: skip
        return Reply(cut(frames, step), headers=ES_HEADERS)

    proxy.on(p, answer)
    resp = proxy.boto().converse_stream(modelId=model, messages=ASK_JSON, outputConfig=JSON_OUTPUT)
    deltas = [e["contentBlockDelta"]["delta"] for e in resp["stream"] if "contentBlockDelta" in e]
    assert all(set(d) == {"text"} for d in deltas)
    assert json.loads("".join(d["text"] for d in deltas)) == JSON_WANT


def test_converse_prose_answer_stays_text(proxy: Proxy) -> None:
    """No outputConfig: the same text is prose, the original as it is (not JSON-escaped)."""
    model = "us.anthropic.claude-prose-v1:0"
    p = path(model, "converse")
    proxy.on(p, lambda rec: Reply([json.dumps({"output": {"message": {"role": "assistant", "content": [
        {"text": "path WINPATH"}]}}, "stopReason": "end_turn"}).encode()], headers=JSON_HEADERS, framing="length"))
    out = proxy.boto().converse(modelId=model, messages=[{"role": "user", "content": [{"text": "path?"}]}])
    assert out["output"]["message"]["content"][0]["text"] == f"path {WINQ}"


@pytest.mark.parametrize("op", ["invoke", "invoke-with-response-stream"])
def test_invoke_json_answer(proxy: Proxy, op: str) -> None:
    """InvokeModel's Messages body asking for JSON (`output_config.format`), answered whole
    and in chunks."""
    model = f"anthropic.claude-json-{op}-v1:0"
    p = path(model, op)

    def answer(rec: Recorded) -> Reply:
        assert_masked(rec)
        assert json.loads(rec.body)["output_config"]["format"]["type"] == "json_schema"
        text = _json_text(placeholder(rec))
        if op == "invoke":
            return Reply([json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": model,
                                      "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                                      "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()],
                         headers=JSON_HEADERS, framing="length")  # fmt: skip
        evs = [{"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                     "model": model, "content": [], "usage": {"input_tokens": 1}}},
               {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
               *({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text[i : i + 3]}}
                 for i in range(0, len(text), 3)),
               {"type": "content_block_stop", "index": 0},
               {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
               {"type": "message_stop"}]  # fmt: skip
        return Reply(cut([chunk_frame(e) for e in evs], 5), headers=ES_HEADERS)

    proxy.on(p, answer)
    schema = {"type": "object", "properties": {"session_id": {"type": "string"}}}
    body = messages_body(output_config={"format": {"type": "json_schema", "schema": schema}})
    if op == "invoke":
        resp = proxy.boto().invoke_model(modelId=model, body=json.dumps(body))
        text = json.loads(resp["body"].read())["content"][0]["text"]
    else:
        resp = proxy.boto().invoke_model_with_response_stream(modelId=model, body=json.dumps(body))
        evs = [json.loads(e["chunk"]["bytes"]) for e in resp["body"] if "chunk" in e]  # (boto3 decoded the base64)
        text = "".join(e["delta"]["text"] for e in evs if e["type"] == "content_block_delta")
    assert json.loads(text) == JSON_WANT
