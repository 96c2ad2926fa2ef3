"""The mitmproxy adapter, in-process: options, hooks, the stream callable."""

from __future__ import annotations

import contextlib
import gzip
import json
from pathlib import Path

import pytest
from mitmproxy import exceptions
from mitmproxy.test import taddons, tflow, tutils

from anthropic_util import build_stream, read_stream
from disguiselib.apis.anthropic.messages import AnthropicStream
from disguiselib.mitm.addon import CODED_OFF_LOOP, Disguise
from disguiselib.mitm.callables import StreamCall

MAPPING = """
literals:
  Acme Corp: Zenith Labs
patterns:
  - name: EMAIL
    regex: '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+'
strip:
  - regex: '\\[\\[\\s*reply_to(?:_current|:[^\\]\\n]*)?\\s*\\]\\]'
"""


@contextlib.contextmanager
def context(addon):
    """taddons.context, closing the event loop it makes when none is running."""
    with taddons.context(addon) as tctx:
        try:
            yield tctx
        finally:
            tctx.master.event_loop.close()


@pytest.fixture
def addon(tmp_path: Path):
    (tmp_path / "m.yaml").write_text(MAPPING)
    a = Disguise()
    with context(a) as tctx:
        tctx.configure(a, disguise_mappings=[str(tmp_path / "m.yaml")])
        yield a, tctx


def messages_flow(body: bytes, path: str = "/v1/messages"):
    f = tflow.tflow()
    f.request.method = "POST"
    f.request.path = path
    f.request.host = "api.anthropic.com"
    f.request.headers["content-type"] = "application/json"
    f.request.content = body
    return f


BODY = json.dumps({"model": "m", "max_tokens": 5, "stream": True,
                   "messages": [{"role": "user", "content": "Acme Corp, bob@corp.example.com"}]}).encode()


def test_bad_mapping_is_an_option_error(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("literals: {Acme: 'a\"b'}")
    a = Disguise()
    with context(a) as tctx:
        with pytest.raises(exceptions.OptionsError, match="bad.yaml:1: literal #1"):
            tctx.configure(a, disguise_mappings=[str(tmp_path / "bad.yaml")])


@pytest.mark.parametrize("name", ["disguise_decoded_limit", "disguise_offload_bytes", "disguise_stream_bytes",
                                  "disguise_capture_limit"])  # fmt: skip
def test_a_negative_size_is_refused_while_running_and_rolled_back(tmp_path: Path, name: str) -> None:
    """G1: mitmweb's PUT /options set disguise_decoded_limit=-1 and it stayed."""
    (tmp_path / "m.yaml").write_text(MAPPING)
    a = Disguise()
    with context(None) as tctx:
        tctx.master.options.set(f"disguise_mappings={tmp_path / 'm.yaml'}", defer=True)
        tctx.master.addons.add(a, a.inspect)
        assert a.config is not None
        before = getattr(tctx.options, name)
        with pytest.raises(exceptions.OptionsError, match=f"{name}: must be 0 or more, not -1"):
            tctx.options.update(**{name: -1})
        assert getattr(tctx.options, name) == before
        tctx.options.update(**{name: 0})  # 0 is a value each takes
        assert getattr(tctx.options, name) == 0


def test_a_negative_size_at_load_is_an_error_and_refuses_requests(tmp_path: Path, caplog) -> None:
    (tmp_path / "m.yaml").write_text(MAPPING)
    a = Disguise()
    with context(None) as tctx:
        tctx.master.options.set(f"disguise_mappings={tmp_path / 'm.yaml'}", "disguise_decoded_limit=-1", defer=True)
        with caplog.at_level("ERROR"):
            load_like_a_script(tctx, a)
        assert "disguise_decoded_limit: must be 0 or more, not -1" in caplog.text
        assert a.config is None
        f = messages_flow(BODY)
        a.guard.request(f)
        assert f.response is not None and f.response.status_code == 503


def test_request_masked_and_stream_restored(addon) -> None:
    a, _ = addon
    f = messages_flow(BODY)
    a.request(f)
    assert f.response is None
    assert json.loads(f.request.content)["messages"][0]["content"] == "Zenith Labs, [EMAIL_1]"
    assert f.request.headers["accept-encoding"] == "identity"
    f.response = tutils.tresp(content=b"")
    f.response.headers["content-type"] = "text/event-stream"
    f.response.headers["content-length"] = "123"
    a.responseheaders(f)
    call = f.response.stream
    assert isinstance(getattr(call, "inner", call), StreamCall)  # capture.Tee wraps it
    assert "content-length" not in f.response.headers
    body = build_stream([("text", ["Zen", "ith Labs writes to [EMA", "IL_1] [[reply", "_to_current]]"])])
    out = []
    for i in range(0, len(body), 5):
        r = call(body[i : i + 5])
        assert r != b"", "b'' mid-stream ends a chunked body"
        out.extend(r)
    out.extend(call(b""))
    assert call(b"") == []  # the final call may come twice
    blocks, _ = read_stream(b"".join(out))
    assert blocks[0]["text"] == "Acme Corp writes to bob@corp.example.com "
    a.response(f)
    assert f.metadata["disguise"]["restored"] >= 2


def test_gzip_stream_is_decoded_before_reversal(addon) -> None:
    a, _ = addon
    f = messages_flow(BODY)
    a.request(f)
    f.response = tutils.tresp(content=b"")
    f.response.headers["content-type"] = "text/event-stream"
    f.response.headers["content-encoding"] = "gzip"
    a.responseheaders(f)
    assert "content-encoding" not in f.response.headers
    z = gzip.compress(build_stream([("text", ["Zenith ", "Labs"])]))
    out = b"".join(b"".join(f.response.stream(z[i : i + 9])) for i in range(0, len(z), 9))
    out += b"".join(f.response.stream(b""))
    assert read_stream(out)[0][0]["text"] == "Acme Corp"


def test_unknown_encoding_gives_an_error_event_only(addon) -> None:
    a, _ = addon
    f = messages_flow(BODY)
    a.request(f)
    f.response = tutils.tresp(content=b"")
    f.response.headers["content-type"] = "text/event-stream"
    f.response.headers["content-encoding"] = "compress"
    a.responseheaders(f)
    first = f.response.stream(b"\x1f\x9d garbage")
    assert b"event: error" in b"".join(first)
    assert f.response.stream(b"more") == [] and f.response.stream(b"") == []


def test_stream_failure_ends_with_explicit_error() -> None:
    class Boom(AnthropicStream):
        def on_event(self, ev):
            raise RuntimeError("secret Acme Corp text")

    from strategies import RULES

    call = StreamCall(Boom(RULES.restorer({})))
    out = call(b'data: {"text": "Zenith Labs"}\n\n')  # an event that must be looked at
    assert len(out) == 1 and b"event: error" in out[0]
    assert b"Acme" not in out[0]  # the exception text is not echoed
    assert call(b"data: {}\n\n") == [] and call(b"") == []


def test_unmaskable_request_is_refused_not_forwarded(addon) -> None:
    a, _ = addon
    f = messages_flow(b'{"messages": [')
    a.request(f)
    assert f.response is not None and f.response.status_code == 400
    err = json.loads(f.response.content)
    assert err["type"] == "error" and "not valid JSON" in err["error"]["message"]


def test_fail_open_forwards_unchanged(addon) -> None:
    a, tctx = addon
    tctx.configure(a, disguise_fail_open=True)
    f = messages_flow(b'{"messages": [')
    a.request(f)
    assert f.response is None and f.request.content == b'{"messages": ['


def test_fail_open_never_forwards_a_signed_bedrock_body(addon) -> None:
    """fail-open forwards what could not be masked *unmasked*; a SigV4-signed Bedrock
    body without disguise_aws_resign cannot be masked (nothing could sign it again), and
    forwarding it as it is would send it unmasked: refused even then."""
    a, tctx = addon
    tctx.configure(a, disguise_fail_open=True)
    body = json.dumps({"anthropic_version": "bedrock-2023-05-31", "messages": [{"role": "user", "content": "Acme Corp"}]})
    f = messages_flow(body.encode(), path="/model/anthropic.claude-sonnet-4-v1:0/invoke")
    f.request.headers["authorization"] = (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250101/us-east-1/bedrock/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=" + "0" * 64
    )
    a.requestheaders(f)
    a.request(f)
    assert f.response is not None and f.response.status_code == 400
    assert b"SigV4" in f.response.content and b"disguise_aws_resign is off" in f.response.content
    assert b"Acme Corp" in f.request.content  # refused, not masked-and-sent


def test_compressed_request_body(addon) -> None:
    a, _ = addon
    f = messages_flow(b"")
    f.request.headers["content-encoding"] = "gzip"
    f.request.raw_content = gzip.compress(BODY)
    a.request(f)
    assert f.request.headers["content-encoding"] == "gzip"
    assert b"Zenith Labs" in f.request.content and b"Acme" not in f.request.content


def _named_gzip(body: bytes, name: bytes) -> bytes:
    """body as `gzip -c NAME` writes it: the member's header keeps the file name (FNAME)."""
    raw = gzip.compress(body, mtime=0)
    return raw[:3] + bytes([raw[3] | 0x08]) + raw[4:10] + name + b"\0" + raw[10:]


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("path", ["/v1/messages", "/v1/skills"])
def test_a_compressed_body_left_unchanged_leaves_without_what_its_container_carries(addon, size, path) -> None:
    """E4 (stop 65): a body that needs no masking went on byte-identical, its gzip header
    with it: a file name that is an original reached upstream, the decoded body (all
    that was checked) holding none. Such a container is made again from the checked
    body, on the loop and off it (a compressed body from CODED_OFF_LOOP), on a masked
    endpoint and an unknown one; a plain one still leaves as it came."""
    import random

    a, tctx = addon
    text = "hi there" if size == "small" else " ".join(f"{random.Random(i).getrandbits(64):016x}" for i in range(900))
    doc = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": text}]}
    body = json.dumps(doc if path == "/v1/messages" else {"display_title": text}).encode()
    for raw, changed in ((_named_gzip(body, b"Acme Corp.json"), True), (gzip.compress(body), False)):
        f = messages_flow(b"", path)
        f.request.headers["content-encoding"] = "gzip"
        f.request.raw_content = raw
        f.request.headers["content-length"] = str(len(raw))
        assert (len(raw) >= CODED_OFF_LOOP) == (size == "large")
        pending = a.request(f)
        if pending is not None:
            tctx.master.event_loop.run_until_complete(pending)
        assert f.response is None
        assert (f.request.raw_content != raw) == changed and b"Acme" not in f.request.raw_content
        assert gzip.decompress(f.request.raw_content) == body
        assert f.request.headers["content-length"] == str(len(f.request.raw_content))


@pytest.mark.parametrize("enc", ["gzip", "br", "deflate"])
def test_a_compressed_request_body_is_decoded_and_encoded_again_off_the_loop(addon, monkeypatch, enc) -> None:
    """Decompressing a request body and compressing the masked one again are done in a
    thread (mitmproxy's gzip of 1 MB took tens of ms on the event loop); what leaves is
    what the content setter makes, its length header right."""
    import threading

    from mitmproxy.net import encoding

    from disguiselib.mitm import addon as addon_mod

    a, tctx = addon
    where: list[str] = []
    for name in ("decode_body", "encoded_again"):
        real = getattr(addon_mod, name)

        def spy(*args, _real=real, _n=name):
            where.append(f"{_n}:{threading.current_thread() is threading.main_thread()}")
            return _real(*args)

        monkeypatch.setattr(addon_mod, name, spy)
    import random

    rng = random.Random(5)
    text = " ".join(f"Acme Corp {rng.getrandbits(64):016x} bob@corp.example.com" for i in range(900))  # compressed > 4 KiB
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": text}]}).encode()
    f = messages_flow(b"")
    f.request.headers["content-encoding"] = enc
    f.request.raw_content = encoding.encode(body, enc)
    assert len(f.request.raw_content) >= addon_mod.CODED_OFF_LOOP and len(body) < 64 * 1024
    pending = a.request(f)
    assert pending is not None
    tctx.master.event_loop.run_until_complete(pending)
    assert where == ["decode_body:False", "encoded_again:False"]
    assert f.request.headers["content-encoding"] == enc
    assert f.request.headers["content-length"] == str(len(f.request.raw_content))
    out = json.loads(encoding.decode(f.request.raw_content, enc))["messages"][0]["content"]
    assert "Acme Corp" not in out and out.count("Zenith Labs") == 900 and "bob@corp" not in out


def test_hosts_option_and_non_llm_paths(addon) -> None:
    a, tctx = addon
    f = messages_flow(BODY, path="/v1/models")
    a.request(f)
    assert f.request.content == BODY
    tctx.configure(a, disguise_hosts=["api.openai.com"])
    f = messages_flow(BODY)
    a.request(f)
    assert f.request.content == BODY


def test_whole_json_response_restored(addon) -> None:
    a, _ = addon
    f = messages_flow(BODY)
    a.request(f)
    resp = {"id": "msg", "type": "message", "role": "assistant", "model": "m", "content": [
        {"type": "thinking", "thinking": "Zenith Labs", "signature": "s"},
        {"type": "text", "text": "Zenith Labs, [EMAIL_1] [[reply_to_current]]"},
        {"type": "tool_use", "id": "t", "name": "x", "input": {"Zenith Labs": "[EMAIL_1]"}}]}
    f.response = tutils.tresp(content=json.dumps(resp).encode())
    f.response.headers["content-type"] = "application/json"
    a.responseheaders(f)
    assert not f.response.stream
    a.response(f)
    got = json.loads(f.response.content)
    assert got["content"][0]["thinking"] == "Zenith Labs"
    assert got["content"][1]["text"] == "Acme Corp, bob@corp.example.com "
    assert got["content"][2]["input"] == {"Acme Corp": "bob@corp.example.com"}


def test_unstreamed_sse_body_restored_in_response_hook(addon) -> None:
    a, _ = addon
    f = messages_flow(BODY)
    a.request(f)
    f.response = tutils.tresp(content=build_stream([("text", ["Zen", "ith Labs"])]))
    f.response.headers["content-type"] = "text/event-stream"
    a.response(f)  # e.g. a replayed flow: responseheaders set no stream
    assert read_stream(f.response.content)[0][0]["text"] == "Acme Corp"


def test_placeholders_are_not_restored_into_another_flow(addon) -> None:
    a, _ = addon
    f1 = messages_flow(BODY)
    a.request(f1)
    f2 = messages_flow(json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode())
    a.request(f2)
    f2.response = tutils.tresp(content=json.dumps({"type": "message", "content": [
        {"type": "text", "text": "[EMAIL_1]"}]}).encode())
    f2.response.headers["content-type"] = "application/json"
    a.response(f2)
    assert json.loads(f2.response.content)["content"][0]["text"] == "[EMAIL_1]"


def test_internal_error_while_masking_refuses(addon, monkeypatch, caplog) -> None:
    a, _ = addon
    from disguiselib import pipeline as mitm

    def boom(*args, **kwargs):
        raise KeyError("Acme Corp")  # a bug whose exception text holds an original

    monkeypatch.setattr(mitm, "mask_request_body", boom)
    f = messages_flow(BODY)
    with caplog.at_level("INFO"):
        a.request(f)
    assert f.response is not None and f.response.status_code == 400
    assert b"internal error (KeyError)" in f.response.content
    assert "internal error (KeyError)" in caplog.text
    assert "Acme" not in caplog.text and b"Acme" not in f.response.content


def test_event_over_the_limit_ends_with_error_event() -> None:
    from strategies import RULES

    s = AnthropicStream(RULES.restorer({}))
    s.framer.max_event_bytes = 64
    call = StreamCall(s)
    ok = call(b"event: ping\ndata: {}\n\n")
    assert ok == [b"event: ping\ndata: {}\n\n"]
    out = call(b"data: " + b"x" * 100)
    assert len(out) == 1 and out[0].startswith(b"event: error\n") and b"exceeds 64 bytes" in out[0]
    assert call(b"") == []


# -- issue 6: the Guard and the ways of having no rules -----------------------------------------


def guard_of(a):
    from disguiselib.mitm.guard import GUARD_NAME

    return a.guard, GUARD_NAME


def test_guard_is_one_per_master(addon) -> None:
    # (That it runs after every other addon in a real mitmdump, where scripts sit under
    # the script loader, shows in the integration test with modify_body.)
    a, tctx = addon
    from mitmproxy.addonmanager import Loader

    from disguiselib.mitm.guard import Guard

    g, name = guard_of(a)
    assert tctx.master.addons.get(name) is g and g in tctx.master.addons.chain
    b = Disguise()  # what a script reload builds
    b.load(Loader(tctx.master))
    assert b.guard is g and sum(isinstance(x, Guard) for x in tctx.master.addons.chain) == 1


def test_request_no_disguise_handled_is_refused_by_the_guard(addon) -> None:
    a, _ = addon
    g, _ = guard_of(a)
    f = messages_flow(BODY)
    g.requestheaders(f)
    g.request(f)  # as if the Disguise script had been dropped: none of its hooks ran
    assert f.response is not None and f.response.status_code == 503
    assert json.loads(f.response.content)["type"] == "error"
    other = tflow.tflow()  # GET http://address:22/path: not an LLM request
    g.request(other)
    assert other.response is None


def test_guard_refuses_a_target_rewritten_after_masking(addon) -> None:
    a, _ = addon
    g, _ = guard_of(a)
    f = tflow.tflow()
    f.request.host = "example.com"
    f.request.path = "/index.html"
    a.requestheaders(f)
    a.request(f)
    assert f.response is None
    f.request.host = "api.anthropic.com"  # e.g. map_remote, after the script
    f.request.path = "/v1/messages"
    g.request(f)
    assert f.response is not None and b"rewritten" in f.response.content


def test_leak_guard_sees_what_a_later_addon_put_back(addon) -> None:
    a, _ = addon
    g, _ = guard_of(a)
    f = messages_flow(BODY)
    a.requestheaders(f)
    a.request(f)
    assert f.response is None
    f.request.content = f.request.content.replace(b"Zenith Labs", b"Acme Corp")
    g.request(f)
    assert f.response is not None and f.response.status_code == 400
    msg = json.loads(f.response.content)["error"]["message"]
    assert "leak guard" in msg and "$.messages[0].content" in msg and "Acme" not in msg


def test_failed_reload_keeps_the_previous_rules(addon, tmp_path: Path, caplog) -> None:
    a, tctx = addon
    from mitmproxy import ctx
    from mitmproxy.addonmanager import Loader

    (tmp_path / "m.yaml").write_text("literals: {Acme Corp: ''}\n")
    b = Disguise()  # a script reload: a new instance, configured with every option
    b.load(Loader(tctx.master))
    with caplog.at_level("ERROR"):
        b.configure(set(ctx.options.keys()))  # logged, not raised: mitmproxy would add a traceback
    assert "previous rule set stays in force" in caplog.text
    assert "m.yaml:1: literal #1: disguise is empty" in caplog.text
    assert b.config is a.config  # the previous valid set, not none
    f = messages_flow(BODY)
    b.request(f)
    assert json.loads(f.request.content)["messages"][0]["content"] == "Zenith Labs, [EMAIL_1]"


def test_hot_reload_is_in_force_for_the_next_request_only(addon, tmp_path: Path) -> None:
    a, _ = addon
    f1 = messages_flow(BODY)
    a.request(f1)
    (tmp_path / "m.yaml").write_text(MAPPING.replace("Zenith Labs", "Orion Labs"))
    f2 = messages_flow(BODY)
    a.request(f2)
    assert b"Orion Labs" in f2.request.content
    for f, disguise in ((f1, "Zenith Labs"), (f2, "Orion Labs")):  # each flow keeps its rules
        f.response = tutils.tresp(content=json.dumps({"type": "message", "content": [
            {"type": "text", "text": disguise}]}).encode())  # fmt: skip
        f.response.headers["content-type"] = "application/json"
        a.responseheaders(f)
        a.response(f)
        assert json.loads(f.response.content)["content"][0]["text"] == "Acme Corp"


def test_bad_option_value_is_found_before_mitmproxy_drops_the_script(caplog) -> None:
    a = Disguise()
    with context(None) as tctx:
        tctx.master.options.set("disguise_fail_open=yes", defer=True)
        with caplog.at_level("ERROR"), pytest.raises(exceptions.OptionsError):
            tctx.master.addons.add(a)  # mitmproxy's register: load, then the deferred values
        assert "option disguise_fail_open" in caplog.text
        g = tctx.master.addons.get("disguise_guard")
        assert g is not None and g in tctx.master.addons.chain and "disguise_fail_open" in g.failure
        f = messages_flow(BODY)
        g.request(f)
        assert f.response.status_code == 503 and b"disguise_fail_open" in f.response.content
        from mitmproxy.proxy.layers.http import HttpErrorHook

        tctx.master.addons.invoke_addon_sync(g, HttpErrorHook(f))  # its hooks stay callable


@pytest.mark.parametrize(
    "spec, meant",
    [("disguise_mapping=m.yaml", "disguise_mappings"), ("disguise-hosts=x", "disguise_hosts"),
     ("disgiuse_fail_open=true", "disguise_fail_open"), ("disguise_capture=9", "disguise_capture_limit")],
)  # fmt: skip
def test_a_mistyped_option_name_is_refused_at_load(spec: str, meant: str, caplog) -> None:
    """Issue 15, case 5: mitmproxy keeps an unknown `--set` name aside and says nothing;
    the rules it named never loaded and every request went out with the defaults only."""
    a = Disguise()
    with context(None) as tctx:
        tctx.master.options.set(spec, "other_addon_option=1", defer=True)
        with caplog.at_level("ERROR"):
            load_like_a_script(tctx, a)
        name = spec.split("=")[0]
        assert f"option {name} does not exist: did you mean {meant}?" in caplog.text
        assert "other_addon_option" not in caplog.text  # another addon's: not ours to judge
        assert a.config is None
        f = messages_flow(BODY)
        a.request(f)
        assert f.response.status_code == 503 and meant.encode() in f.response.content


def test_an_option_name_of_another_addon_passes() -> None:
    a = Disguise()
    with context(None) as tctx:
        tctx.master.options.set("mapping=x", "hosts=y", defer=True)
        load_like_a_script(tctx, a)
        assert a.config is not None


def load_like_a_script(tctx, a: Disguise) -> None:
    """What mitmproxy's script loader does with addon/disguise.py: register the module's
    addons (each declares its options), then configure them with every option."""
    import types

    from mitmproxy import hooks

    ns = types.SimpleNamespace(addons=[a, a.inspect])
    tctx.master.addons.register(ns)
    tctx.master.addons.invoke_addon_sync(ns, hooks.ConfigureHook(set(tctx.master.options.keys())))


def test_reverse_target_not_in_hosts_is_refused(addon) -> None:
    a, tctx = addon
    tctx.configure(a, mode=["reverse:https://api.anthropic.com"])
    with pytest.raises(exceptions.OptionsError, match="does not name the reverse-mode target api.anthropic.com "
                       r"\(api.antropic.com looks like a misspelling of it\)"):  # fmt: skip
        tctx.configure(a, disguise_hosts=["api.antropic.com"])
    tctx.configure(a, disguise_hosts=["api.anthropic.com", "example.org"])
    with pytest.raises(exceptions.OptionsError, match="target 127.0.0.1:8443"):
        tctx.configure(a, mode=["regular", "reverse:http://127.0.0.1:8443@9000"])
    tctx.configure(a, disguise_hosts=[])  # empty: every request in reverse mode is protected
    with pytest.raises(exceptions.OptionsError, match="relays api.openai.com as raw TLS"):
        tctx.configure(a, mode=["reverse:tls://api.openai.com:443"])
    tctx.configure(a, mode=["reverse:dns://9.9.9.9"])  # not an LLM host: not ours


def test_tcp_hosts_of_a_protected_host_is_refused(addon) -> None:
    a, tctx = addon
    with pytest.raises(exceptions.OptionsError, match=r"api.openai.com is relayed as raw TCP \(tcp_hosts\)"):
        tctx.configure(a, tcp_hosts=["openai"])


def test_response_no_disguise_handled_is_an_error_not_unrestored(addon) -> None:
    a, _ = addon
    g, _ = guard_of(a)
    f = messages_flow(BODY)
    a.request(f)
    f.response = tutils.tresp(content=b"")
    f.response.headers["content-type"] = "text/event-stream"
    g.responseheaders(f)  # the Disguise instance went away mid-flow
    assert f.response.status_code == 502 and b"no longer loaded" in b"".join(f.response.stream(b"Zenith"))
    f2 = messages_flow(BODY)
    a.request(f2)
    f2.response = tutils.tresp(content=b'{"content": [{"type": "text", "text": "Zenith Labs"}]}')
    g.response(f2)
    assert f2.response.status_code == 502 and b"Zenith" not in f2.response.content


def test_client_typed_placeholders_are_skipped(addon) -> None:
    a, _ = addon
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "[EMAIL_1] x@y.example.org"}]})
    f = messages_flow(body.encode())
    a.request(f)
    assert json.loads(f.request.content)["messages"][0]["content"] == "[EMAIL_1] [EMAIL_2]"
    f.response = tutils.tresp(content=b'{"content": [{"type": "text", "text": "[EMAIL_1] [EMAIL_2]"}]}')
    f.response.headers["content-type"] = "application/json"
    a.response(f)
    assert json.loads(f.response.content)["content"][0]["text"] == "[EMAIL_1] x@y.example.org"


def test_passthrough_of_a_protected_host_is_refused(addon) -> None:
    a, tctx = addon
    tctx.master.options.add_option("ignore_hosts", __import__("collections.abc").abc.Sequence[str], [], "")
    with pytest.raises(exceptions.OptionsError, match="api.anthropic.com is passed through"):
        tctx.configure(a, ignore_hosts=["anthropic"])
    tctx.configure(a, ignore_hosts=["^example\\.org"])


def test_streaming_switched_on_after_disguise_closes_the_connection(addon) -> None:
    a, _ = addon
    g, _ = guard_of(a)
    f = messages_flow(BODY)
    a.requestheaders(f)
    f.request.stream = True  # another addon, after the script: the body would go out as it comes
    g.requestheaders(f)
    assert f.error is not None and f.error.msg == f.error.KILLED_MESSAGE


def test_leak_guard_reads_the_table_the_masker_reads(addon) -> None:
    """The guard checks what the API's table says the masker masks (issue 15): a field
    the table exempts (`model`, the model's name) is not looked at, as the masker
    leaves it; it never refuses what the masker produced."""
    a, _ = addon
    g, _ = guard_of(a)
    body = {"model": "bob@corp.example.com", "messages": [{"role": "user", "content": "hi"}]}
    f = messages_flow(json.dumps(body).encode(), path="/v1/chat/completions")
    a.requestheaders(f)
    a.request(f)
    assert f.response is None and b"bob@corp" in f.request.content  # the table exempts it
    g.request(f)
    assert f.response is None  # so does the guard


def test_guard_rechecks_a_body_changed_after_masking(addon) -> None:
    """A later addon that puts an original back into a masked body: the Guard, last in
    the chain, scans the body again (it skips the scan only for the bytes the pipeline
    checked)."""
    a, _ = addon
    g, _ = guard_of(a)
    f = messages_flow(BODY)
    a.requestheaders(f)
    a.request(f)
    assert f.response is None and b"Acme" not in f.request.content
    g.request(f)
    assert f.response is None  # unchanged: passed without a second scan
    f2 = messages_flow(BODY)
    a.requestheaders(f2)
    a.request(f2)
    f2.request.content = f2.request.content.replace(b"Zenith Labs", b"Acme Corp")  # another addon
    g.request(f2)
    assert f2.response is not None and b"leak guard" in f2.response.content


def test_a_recheck_that_fails_refuses_the_request(addon, monkeypatch) -> None:
    """The Guard's own scan raising (a text that cannot be scanned in linear time, a
    bug) is a refusal: an exception escaping a hook lets mitmproxy forward the flow."""
    from disguiselib.errors import MaskError
    from disguiselib.mitm import guard as guard_mod

    a, _ = addon
    g, _ = guard_of(a)
    f = messages_flow(BODY)
    a.requestheaders(f)
    a.request(f)
    f.request.content = f.request.content.replace(b"Zenith Labs", b"Zenith Lab")  # another addon

    def broken(*args):
        raise MaskError("cannot be scanned")

    monkeypatch.setattr(guard_mod, "leak_scan", broken)
    g.request(f)
    assert f.response is not None and f.response.status_code == 400 and b"leak guard" in f.response.content


def test_mitmweb_ui_is_not_reachable_through_the_proxy(addon) -> None:
    """mitmweb 11.0 has no token: a proxy client asking for 127.0.0.1:<web_port> would
    read every flow, originals included (CVE-2025-23217). The Guard closes it."""
    a, tctx = addon
    g, _ = guard_of(a)
    tctx.options.add_option("web_port", int, 8081, "")
    tctx.options.add_option("web_host", str, "127.0.0.1", "")
    for host in ("127.0.0.1", "localhost", "[::1]"):
        f = tflow.tflow()
        f.request.host, f.request.port, f.request.path = host, 8081, "/flows"
        g.requestheaders(f)
        assert f.error is not None and f.error.msg == f.error.KILLED_MESSAGE, host
    other = tflow.tflow()
    other.request.host, other.request.port = "127.0.0.1", 8082
    g.requestheaders(other)
    assert other.error is None


@pytest.mark.parametrize(
    "path", ["/v1/evals", "/v1/videos", "/v1/chatkit/sessions", "/v1/complete", "/guardrail/g1/version/1/apply"]
)
def test_a_documented_endpoint_on_a_gateway_host_is_scanned(addon, path: str) -> None:
    """Every endpoint a provider documents is LLM-shaped wherever it is sent (its inventory,
    providers/*.ENDPOINTS): through a gateway whose host disguise does not know, with no
    disguise_hosts, a body holding an original is refused, not passed unscanned."""
    a, _ = addon
    f = messages_flow(json.dumps({"prompt": "Acme Corp"}).encode(), path)
    f.request.host = "llm-gateway.example"
    a.requestheaders(f)
    a.request(f)
    assert f.response is not None and f.response.status_code == 400, path
    g = messages_flow(json.dumps({"prompt": "nothing"}).encode(), path)
    g.request.host = "llm-gateway.example"
    a.requestheaders(g)
    a.request(g)
    assert g.response is None


@pytest.mark.parametrize("warm", [True, False])
def test_the_worker_starts_with_the_proxy_unless_disguise_offload_warm_is_off(addon, monkeypatch, warm) -> None:
    """disguise_offload_warm (on by default): the masking worker is started when the proxy
    runs; off, nothing is started then (the first large body starts it, mitm/offload.py)."""
    a, tctx = addon
    started: list[int] = []
    monkeypatch.setattr(a.offload, "_warm", lambda: started.append(1))  # no real process here: tests/mitm/test_offload.py
    if not warm:
        tctx.configure(a, disguise_offload_warm=False)
    a.running()
    assert (a.offload.live, len(started)) == ((True, 1) if warm else (False, 0))


def _tls_start(
    address: tuple[str, int], client_sni: str | None, server_sni: str | None = None, mode: str = "regular",
    quic: bool = False,
):
    """The data of mitmproxy's tls_start_server hook (quic: of quic_start_server, HTTP/3's)."""
    from mitmproxy import connection, tls
    from mitmproxy.proxy import context as pcontext
    from mitmproxy.proxy.layers.quic import QuicTlsData
    from mitmproxy.proxy.mode_specs import ProxyMode

    client = tflow.tclient_conn()
    client.sni, client.proxy_mode = client_sni, ProxyMode.parse(mode)
    server = connection.Server(address=address)
    server.sni = server_sni
    ctx_ = pcontext.Context(client, None)  # type: ignore[arg-type]  # (the hook reads no option)
    ctx_.server = server
    return QuicTlsData(server, ctx_) if quic else tls.TlsData(server, ctx_)


def _start_server(a: Disguise, data: object) -> None:
    """The hook data's own: quic_start_server for QUIC's, else tls_start_server."""
    from mitmproxy.proxy.layers.quic import QuicTlsData

    (a.quic_start_server if isinstance(data, QuicTlsData) else a.tls_start_server)(data)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("address", "client_sni", "server_sni", "hosts", "sent"),
    [
        (("api.anthropic.com", 443), "Acme Corp.example", None, [], "api.anthropic.com"),  # the client's: replaced
        (("api.anthropic.com", 443), None, "Acme Corp.example", [], "api.anthropic.com"),  # one set before: too
        (("api.anthropic.com", 443), "api.example.test", None, [], None),  # clean: left to TlsConfig (the client's)
        (("Acme Corp.example", 443), "Acme Corp.example", None, [], None),  # the host connected to: its own name
        (("api.other.test", 443), "Acme Corp.example", None, ["api.anthropic.com"], None),  # off disguise_hosts
        (("api.anthropic.com", 443), "Acme Corp.example", None, ["api.anthropic.com"], "api.anthropic.com"),
    ],
)
@pytest.mark.parametrize("quic", [False, True], ids=["tls", "quic"])
def test_a_tls_server_name_holding_an_original_names_the_host_connected_to(
    addon, address, client_sni, server_sni, hosts, sent, quic, caplog
) -> None:
    a, tctx = addon
    if hosts:
        tctx.configure(a, disguise_hosts=hosts)
    data = _tls_start(address, client_sni, server_sni, quic=quic)
    with caplog.at_level("INFO", logger="disguise"):
        _start_server(a, data)
    assert data.conn.sni == (sent if sent is not None else server_sni)
    said = [r.getMessage() for r in caplog.records if "server name" in r.getMessage()]
    assert said == ([f"disguise: the {'QUIC' if quic else 'TLS'} server name the client gave holds an original: the "
                     f"connection to {sent} names that host instead"] if sent is not None else [])  # fmt: skip
    assert not any("Acme Corp" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("quic", [False, True], ids=["tls", "quic"])
@pytest.mark.parametrize("mode", ["transparent", "wireguard", "local"])
def test_in_a_transparent_mode_the_clients_tls_server_name_is_left_as_it_came(addon, mode: str, quic: bool) -> None:
    """There the host connected to is the address the network gave; the client's name is
    the only one it has (a connection to the user's own internal host goes on)."""
    a, _ = addon
    data = _tls_start(("10.0.0.7", 443), "Acme Corp.example", mode=mode, quic=quic)
    _start_server(a, data)
    assert data.conn.sni is None  # (TlsConfig then gives it the client's)


@pytest.mark.parametrize("quic", [False, True], ids=["tls", "quic"])
def test_without_rules_a_tls_server_name_not_the_host_connected_to_is_replaced(quic: bool) -> None:
    a = Disguise()  # (never configured: no rules in force)
    data = _tls_start(("api.anthropic.com", 443), "anything.example", quic=quic)
    _start_server(a, data)
    assert data.conn.sni == "api.anthropic.com"
