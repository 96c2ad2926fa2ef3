"""Flow files (inspect/flowfile.py): flows as audit records, and the shareable copy (the
provider side only, credentials removed, audited before it is written)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mitmproxy import io
from mitmproxy.test import tflow, tutils

from disguiselib.inspect import flowfile
from disguiselib.inspect.record import META, SIDES, side
from disguiselib.rules import mappings
from disguiselib.rules.rules import Rules

RULES = Rules(mappings.from_dict({"literals": {"Acme Corp": "Zenith Labs"}}))


def llm_flow(sent: bytes = b'{"messages": "Zenith Labs"}', received: bytes = b'{"content": "Acme Corp"}',
             upstream: bytes = b'{"content": "Zenith Labs"}'):  # fmt: skip
    f = tflow.tflow(resp=tutils.tresp(content=received))
    f.request.method, f.request.host, f.request.path = "POST", "api.anthropic.com", "/v1/messages?key=s3cr3t&beta=1"
    f.request.headers["x-api-key"] = "sk-ant-secret"
    f.request.content = sent
    f.metadata[META] = {"api": "anthropic.messages", "masked": 1, "counts": {"literals": 1}, "end": "completed"}
    f.metadata[SIDES] = {"client_request": side(b'{"messages": "Acme Corp"}'),
                         "upstream_response": side(upstream, headers=[("content-type", "application/json"),
                                                                      ("set-cookie", "s=1")], status=200)}  # fmt: skip
    return f


def test_record_of_a_flow() -> None:
    r = flowfile.record(3, llm_flow())
    assert (r.index, r.label, r.api) == (3, "POST /v1/messages", "anthropic.messages")
    assert r.sent == b'{"messages": "Zenith Labs"}' and r.received == b'{"content": "Acme Corp"}'
    assert not r.shared and r.note == ""
    refused = llm_flow()
    refused.metadata[META]["end"] = "refused"
    assert flowfile.record(1, refused).sent is None and "never sent" in flowfile.record(1, refused).note
    plain = tflow.tflow(resp=True)
    assert flowfile.record(1, plain).api is None and flowfile.record(1, plain).note == "not masked by the addon"
    assert [r.index for r in flowfile.records([plain, llm_flow()])] == [1, 2]


def test_a_record_says_how_its_flow_went_wrong() -> None:
    """The audit's line of a flow forwarded unmasked (disguise_fail_open), or whose
    response ended with an error, says so; the same flow's shared copy does not."""
    opened = llm_flow()
    opened.metadata[META]["failed"] = "forwarded UNMASKED (disguise_fail_open): body is not valid JSON"
    assert flowfile.record(1, opened).note == "forwarded unmasked (disguise_fail_open)"
    cut = llm_flow()
    cut.metadata[META]["end"] = "ERROR: HTTP/1 protocol error (stream ended before its final event)"
    assert flowfile.record(1, cut).note == "the response ended with an error"
    cut.metadata[META]["shared"] = True
    del cut.metadata[SIDES]  # (share keeps none of them)
    assert flowfile.record(1, cut).note == ""


def test_the_shared_copy_holds_the_provider_side_without_credentials() -> None:
    g = flowfile.shared_copy(llm_flow())
    assert g is not None
    assert "x-api-key" not in g.request.headers and g.request.path == "/v1/messages?beta=1"
    assert g.response.content == b'{"content": "Zenith Labs"}' and "set-cookie" not in g.response.headers
    assert g.metadata == {META: {"api": "anthropic.messages", "masked": 1, "counts": {"literals": 1},
                                 "end": "completed", "shared": True, "removed_params": ["key"]}}  # fmt: skip
    assert SIDES not in g.metadata and "shared copy" in g.comment
    r = flowfile.record(1, g)
    assert r.shared and ("request", "x-api-key", "sk-ant-secret") not in r.headers


def test_what_has_no_provider_side_is_left_out() -> None:
    dry = llm_flow()
    dry.metadata[META]["dry_run"] = True
    no_up = llm_flow()
    del no_up.metadata[SIDES]["upstream_response"]
    unmasked = llm_flow()
    unmasked.metadata[META]["failed"] = "forwarded UNMASKED (fail open)"
    for f in (dry, no_up, unmasked, tflow.tflow(resp=True)):
        assert flowfile.shared_copy(f) is None


def test_write_shared_audits_before_writing(tmp_path: Path) -> None:
    out = tmp_path / "shared.flows"
    n, dropped, _ = flowfile.write_shared([llm_flow(), tflow.tflow(resp=True)], str(out), RULES)
    assert (n, dropped) == (1, {"not an API disguise transforms": 1})
    (back,) = flowfile.read([str(out)])
    assert back.response.content == b'{"content": "Zenith Labs"}'
    leaky = tmp_path / "leaky.flows"
    with pytest.raises(flowfile.ShareError, match="would not pass the audit"):
        flowfile.write_shared([llm_flow(upstream=b'{"content": "Acme Corp"}')], str(leaky), RULES)
    assert not leaky.exists() and not list(tmp_path.glob(".disguise-share-*"))


def test_read_reads_every_flow(tmp_path: Path) -> None:
    p = tmp_path / "a.flows"
    with open(p, "wb") as fo:
        w = io.FlowWriter(fo)
        w.add(llm_flow())
        w.add(tflow.tflow(resp=True))
    assert len(flowfile.read([str(p)])) == 2


def test_share_says_why_each_flow_was_left_out(tmp_path: Path) -> None:
    """WebSocket and refused flows are left out entirely: said, with counts (issue 27)."""
    ws = tflow.twebsocketflow()
    refused = llm_flow()
    refused.metadata[META]["end"] = "refused"
    unmasked = llm_flow()
    unmasked.metadata[META]["failed"] = "forwarded UNMASKED (disguise_fail_open): x"
    flows = [llm_flow(), ws, refused, refused.copy(), unmasked, tflow.tflow(resp=True), tflow.ttcpflow()]
    n, dropped, _ = flowfile.write_shared(flows, str(tmp_path / "s.flows"), RULES)
    assert n == 1
    assert dropped == {"WebSocket": 1, "refused by the addon": 2, "forwarded unmasked": 1,
                       "not an API disguise transforms": 1, "not HTTP": 1}  # fmt: skip
    text = flowfile.left_out_text(dropped)
    assert text.startswith("6 left out (2 refused by the addon, ") and "1 WebSocket" in text
    assert flowfile.left_out_text({}) == "0 left out"


def test_the_audit_reads_a_flow_of_any_endpoint_that_went_upstream() -> None:
    """Its body, its URL (decoded) and its headers (credentials aside) are read."""
    f = tflow.tflow(resp=True)
    f.request.path = "/v1/conversations/x?owner=Acme%20Corp&key=k"
    f.request.headers["x-api-key"] = "Acme Corp"  # the client's credential: not read
    f.request.headers["x-note"] = "Acme Corp"
    f.request.content = b'{"items": ["Acme Corp"]}'
    r = flowfile.record(1, f)
    assert r.api is None and r.sent is not None
    report = flowfile.audit.audit([r], RULES)
    where = sorted(x.field.split(" [")[0] for x in report.leaks)
    assert where == ["items[0]", "request header 'x-note'", "url"], where
    f.response.headers["x-disguise"] = "refused"  # refused: never went upstream
    assert flowfile.audit.audit([flowfile.record(1, f)], RULES).skipped == 1


def _bedrock_flow(path: str, upstream: bytes):
    f = llm_flow(sent=b'{"messages": [{"role": "user", "content": [{"text": "Zenith Labs"}]}]}', upstream=upstream)
    f.request.host, f.request.path = "bedrock-runtime.us-east-1.amazonaws.com", path
    f.metadata[SIDES]["upstream_response"] = side(upstream, headers=[("content-type", "application/vnd.amazon.eventstream")],
                                                  status=200)  # fmt: skip
    return f


def test_share_refuses_an_original_in_a_bedrock_event_stream(tmp_path: Path) -> None:
    """Issue D2: the provider's answer, as event-stream frames, holds an original: in a
    chunk's base64 bytes (InvokeModel), or split across two frames (Converse)."""
    from aws_util import chunk_frame, converse_frame

    invoke = b"".join(chunk_frame({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta",
                                                                                      "text": t}}) for t in ["I guess it is Acme Corp"])  # fmt: skip
    converse = b"".join(converse_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": t}})
                        for t in ("I guess Acme ", "Corp"))  # fmt: skip
    m = "/model/anthropic.claude-3-5-sonnet-20240620-v1:0"
    for path, body in ((f"{m}/invoke-with-response-stream", invoke), (f"{m}/converse-stream", converse)):
        out = tmp_path / "s.flows"
        with pytest.raises(flowfile.ShareError, match="would not pass the audit"):
            flowfile.write_shared([_bedrock_flow(path, body)], str(out), RULES)
        assert not out.exists()
    # the same streams with the disguise: shared
    clean = b"".join(converse_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": t}})
                     for t in ("I guess Zenith ", "Labs"))  # fmt: skip
    assert flowfile.write_shared([_bedrock_flow(f"{m}/converse-stream", clean)], str(tmp_path / "ok.flows"), RULES)[0] == 1


def test_share_leaves_out_a_flow_whose_upstream_response_was_cut_and_says_so(tmp_path: Path) -> None:
    """Issue D6: a replay of the copy would serve the part kept as the whole answer."""
    cut = llm_flow(upstream=b'{"content": "Zenith La')
    cut.metadata[SIDES]["upstream_response"]["cut"] = True
    assert flowfile.shared_copy(cut) is None
    n, dropped, _ = flowfile.write_shared([llm_flow(), cut], str(tmp_path / "s.flows"), RULES)
    assert (n, dropped) == (1, {flowfile.CUT: 1})
    assert "1 upstream response cut at disguise_capture_limit" in flowfile.left_out_text(dropped)


def test_share_says_which_credential_parameters_it_removed_and_how_replay_matches_them(tmp_path: Path) -> None:
    plain = llm_flow()
    plain.request.path = "/v1/messages"
    shared = flowfile.write_shared([llm_flow(), llm_flow(), plain], str(tmp_path / "s.flows"), RULES)
    assert shared.removed == {"key": 2}
    note = flowfile.replay_note(shared.removed)
    assert "key in 2 flows" in note and "server_replay_ignore_params=key" in note and "s3cr3t" not in note
    assert flowfile.replay_note({}) == ""
    (back, _, _) = flowfile.read([str(tmp_path / "s.flows")])
    assert back.request.path == "/v1/messages?beta=1" and back.metadata[META]["removed_params"] == ["key"]


def test_the_audit_reads_the_headers_as_the_leak_guard_does() -> None:
    """The slots of the providers the request was for (registry.slots_for, as the guard):
    Anthropic's key in x-api-key is not read; another provider's header, a header folded
    over lines, a SigV4 header of a request nobody re-signed are."""
    f = llm_flow()
    f.request.path = "/v1/messages"
    f.request.headers["x-api-key"] = "Acme Corp"
    f.request.headers["api-key"] = "Acme Corp"  # Azure's: not Anthropic's slot
    f.request.headers["x-amz-date"] = "Acme Corp"
    f.request.headers["x-note"] = "Acme\r\n Corp"  # read unfolded, as its receiver reads it
    report = flowfile.audit.audit([flowfile.record(1, f)], RULES)
    where = sorted(x.field.split(" [")[0] for x in report.leaks if x.field.startswith("request header"))
    assert where == ["request header 'api-key'", "request header 'x-amz-date'", "request header 'x-note'"], where
