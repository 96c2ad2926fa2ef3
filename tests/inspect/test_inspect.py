"""Both sides of every flow, summaries, contentviews, replay, audit and the shared copy —
all on flow files written by real mitmdump runs (the official SDKs as clients, a fake
provider that echoes the masked prompt back split into small deltas)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mitmproxy import http, io

from disguiselib.inspect import audit, flowfile, sseview, views
from disguiselib.inspect.record import META, SIDES
from disguiselib.rules import mappings
from disguiselib.rules.rules import Rules
from inspect_util import (
    BOB,
    DISGUISES,
    KEY,
    MAPPINGS,
    ORIGINALS,
    PROMPT,
    Session,
    anthropic_handler,
    anthropic_stream,
    chat_handler,
    other_handler,
)
from integration_util import (
    ADDON,
    MITMDUMP,
    REPO,
    FakeUpstream,
    Mitmdump,
    Reply,
    http_post,
    mitmdump_cmd,
    run_mitmdump,
    write_mappings,
)

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

def read_flows(path: Path) -> list[http.HTTPFlow]:
    with open(path, "rb") as f:
        return list(io.FlowReader(f).stream())


def cli(*args: str, mappings: Path | None = None) -> subprocess.CompletedProcess:
    extra = ["--mappings", str(mappings)] if mappings else []
    return subprocess.run(
        [sys.executable, "-m", "disguiselib", *extra, *args],
        cwd=REPO, capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": str(REPO / "addon"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip


def anthropic_client(port: int, proxy: int | None = None):
    """A client of the reverse proxy at port; with proxy, a client of the upstream at port
    through the regular proxy at that port instead."""
    return anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key="sk-ant-test-credential",
                               max_retries=0, timeout=20.0, http_client=anthropic.DefaultHttpxClient(
                                   trust_env=False, proxy=proxy and f"http://127.0.0.1:{proxy}"))  # fmt: skip


def openai_client(port: int, proxy: int | None = None):
    return openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="test-credential", max_retries=0,
                         timeout=20.0, http_client=openai.DefaultHttpxClient(
                             trust_env=False, proxy=proxy and f"http://127.0.0.1:{proxy}"))  # fmt: skip


def drive(port: int, light: bool = False, proxy: int | None = None) -> dict[str, str]:
    """The recorded session: what each client read (light: the Anthropic stream only)."""
    got: dict[str, str] = {}
    with anthropic_client(port, proxy) as a, openai_client(port, proxy) as o:
        _drive_sdks(a, o, got, light)
    if light:
        return got
    # refused: a body that claims gzip but is not
    status, _, _ = http_post(port, "/v1/messages", b"not gzip at all",
                             {"content-encoding": "gzip", "x-api-key": "sk-ant-test-credential"})  # fmt: skip
    got["refused"] = str(status)
    # not an LLM request
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/v1/models")
    got["other"] = conn.getresponse().read().decode()
    conn.close()
    return got


def _drive_sdks(a, o, got: dict[str, str], light: bool = False) -> None:
    tools = [{"name": "acme_lookup", "description": "look up at Acme Corp",
              "input_schema": {"type": "object", "properties": {"who": {"type": "string"}}}}]  # fmt: skip
    with a.messages.stream(model="a-stream", max_tokens=50, tools=tools,
                           messages=[{"role": "user", "content": PROMPT}]) as s:  # fmt: skip
        msg = s.get_final_message()
    got["anthropic.stream"] = msg.content[0].text
    got["anthropic.tool"] = json.dumps(msg.content[1].input)
    got["anthropic.tool_name"] = msg.content[1].name
    if light:
        return
    m = a.messages.create(model="a-whole", max_tokens=50, messages=[{"role": "user", "content": PROMPT}])
    got["anthropic.whole"] = m.content[0].text
    with o.chat.completions.create(model="o-stream", stream=True, messages=[{"role": "user", "content": PROMPT}]) as st:
        got["openai.stream"] = "".join(c.choices[0].delta.content or "" for c in st if c.choices)


def record(tmp: Path, *extra: str, addon: bool = True, light: bool = False, regular: bool = False) -> Session:
    """A session through mitmdump: a reverse proxy, or with regular, a regular proxy the
    clients reach the fake upstream through."""
    mpath = write_mappings(tmp, MAPPINGS)
    flows = tmp / "session.flows"
    with FakeUpstream() as up:
        up.on("a-stream", anthropic_handler)
        up.on("a-whole", anthropic_handler)
        up.on("o-stream", chat_handler)
        up.on("/v1/models", other_handler)
        cmd = mitmdump_cmd(up.port, tmp / "conf", mpath, "-w", str(flows), *extra)
        if regular:
            cmd[cmd.index("--mode") + 1] = "regular"
        if not addon:
            i = cmd.index("-s")
            del cmd[i : i + 4]
        md = Mitmdump(cmd)
        try:
            client = drive(up.port, light, proxy=md.port) if regular else drive(md.port, light)
        finally:
            md.stop()
        return Session(tmp, flows, mpath, md.output, list(up.requests), client)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    return record(tmp_path_factory.mktemp("session"))


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """The same session recorded by mitmdump WITHOUT the addon: everything leaks."""
    return record(tmp_path_factory.mktemp("plain"), addon=False)


def by_model(flows: list[http.HTTPFlow]) -> dict[str, http.HTTPFlow]:
    out = {}
    for f in flows:
        try:
            out[json.loads(f.request.content)["model"]] = f
        except (ValueError, KeyError, TypeError):
            out[f.request.path] = f
    return out


# -- 1. both sides ----------------------------------------------------------------------


def test_clients_got_originals_back(session: Session) -> None:
    c = session.client
    assert c["anthropic.stream"] == PROMPT
    assert c["anthropic.whole"] == PROMPT
    assert c["openai.stream"] == PROMPT
    assert c["anthropic.tool_name"] == "acme_lookup"
    assert c["refused"] == "400"


def test_every_side_is_kept(session: Session) -> None:
    flows = by_model(read_flows(session.flows))
    ups = {json.loads(r.body)["model"]: r for r in session.upstream if r.path.startswith("/v1/messages") or "chat" in r.path}
    for model in ("a-stream", "a-whole", "o-stream"):
        f = flows[model]
        sides = f.metadata[SIDES]
        # request as the client sent it (originals) / as it went upstream (masked)
        client_req = json.loads(sides["client_request"]["content"])
        assert PROMPT in json.dumps(client_req)
        assert f.request.content == ups[model].body
        assert not any(o in f.request.content.decode() for o in ORIGINALS)
        # response as upstream sent it (disguised) / as the client received it (restored)
        up = sides["upstream_response"]
        assert not up["cut"] and up["size"] == len(up["content"])
        assert b"Zen" in up["content"] and BOB.encode() not in up["content"]
        body = f.response.content
        assert BOB.encode() in body or BOB in json.dumps(json.loads(body))
        assert b"[EMAIL_1]" not in body


def test_streamed_sides_are_exact(session: Session) -> None:
    """The upstream side is byte for byte what the provider sent; the client side
    reassembles to the original text in every channel."""
    f = by_model(read_flows(session.flows))["a-stream"]
    up = f.metadata[SIDES]["upstream_response"]["content"]
    masked_doc = json.loads(f.request.content)
    expected = b"".join(anthropic_stream(masked_doc, masked_doc["messages"][-1]["content"],
                                         {"who": "Zenith Labs"}))  # fmt: skip
    assert up == expected
    chans = sseview.parse_stream(f.response.content).channels
    assert chans["block 0 text"].text == PROMPT
    assert json.loads(chans["block 1 tool_use"].text) == {"who": "Acme Corp"}
    assert chans["block 1 tool_use"].name == "acme_lookup"
    assert sseview.parse_stream(up).channels["block 1 tool_use"].name == "crm_lookup"


def test_summary_comment_has_per_rule_counts(session: Session) -> None:
    f = by_model(read_flows(session.flows))["a-stream"]
    meta = f.metadata[META]
    # prompt: Acme Corp twice, one e-mail, one key; tool: name and description
    assert meta["counts"] == {"literals": 4, "EMAIL": 1, "ANTHROPIC_KEY": 1}
    assert f.comment.startswith("disguise anthropic.messages: masked 6 originals (ANTHROPIC_KEY×1, EMAIL×1, literals×4); restored ")
    assert meta["restored"] >= 5 and meta["end"] == "completed"
    assert f.marked == ":performing_arts:"  # the flow list's marker: masked and restored


def test_refused_flow_is_marked_failed_closed(session: Session) -> None:
    f = [f for f in read_flows(session.flows) if f.response and f.response.status_code == 400][0]
    assert f.marked == ":no_entry:"
    assert "FAILED CLOSED" in f.comment and "request refused" in f.comment
    assert SIDES not in f.metadata


def test_one_info_line_per_flow_with_counts_and_no_original(session: Session) -> None:
    lines = [ln for ln in session.output.splitlines() if "disguise: anthropic.messages 200" in ln
             or "disguise: openai.chat 200" in ln]  # fmt: skip
    assert len(lines) == 3, session.output
    assert any("masked 6 originals (ANTHROPIC_KEY×1, EMAIL×1, literals×4); restored" in ln for ln in lines)
    for o in ORIGINALS:
        assert o not in session.output


def test_client_gone_after_done_keeps_the_summary(session: Session) -> None:
    """The OpenAI SDK closes after [DONE] while the body is still open (the provider
    lingers): on mitmproxy 11 that is "Client disconnected" and the error hook."""
    from mitmproxy.version import VERSION

    f = by_model(read_flows(session.flows))["o-stream"]
    if VERSION.startswith("11."):
        assert f.error is not None, "the scenario must exercise the error hook on mitmproxy 11"
    meta = f.metadata[META]
    assert meta["restored"] >= 2 and meta["counts"]
    assert "restored" in f.comment
    if f.error is not None:
        assert meta["end"] == "complete: the client closed the connection after the final event", f.error
        assert "the client closed the connection after the final event" in f.comment
    else:
        assert meta["end"] == "completed"
    assert f.marked == ":performing_arts:"  # complete, not failed
    assert sseview.parse_stream(f.response.content).channels["choice 0 content"].text == PROMPT


def test_capture_limit_cuts_and_marks(tmp_path: Path) -> None:
    s = record(tmp_path, "--set", "disguise_capture_limit=300", light=True)
    f = by_model(read_flows(s.flows))["a-stream"]
    sides = f.metadata[SIDES]
    assert sides["client_request"]["cut"] and len(sides["client_request"]["content"]) == 300
    assert sides["client_request"]["size"] > 300
    up = sides["upstream_response"]
    assert up["cut"] and len(up["content"]) == 300 and up["size"] > 300
    assert "kept bodies cut at 300 bytes" in f.comment
    text = views.render("Disguise other side", f.response.content, f, f.response)
    assert "CUT: 300 of" in text
    # the client still got everything
    assert s.client["anthropic.stream"] == PROMPT


# -- contentviews --------------------------------------------------------------------------


def view_text(f: http.HTTPFlow, message, name: str) -> str:
    """The view as mitmproxy itself renders it (11 and 12 APIs), long lines joined
    again where the view wrapped them."""
    from mitmproxy import contentviews

    from disguiselib.inspect.render import WRAP_MARK

    if hasattr(contentviews, "prettify_message"):
        text = contentviews.prettify_message(message, f, name.lower()).text
    else:
        _, lines, err = contentviews.get_message_content_view(name, message, f)
        assert err is None, err
        text = "\n".join("".join(t for _, t in line) for line in lines)
    return text.replace(WRAP_MARK + "\n", "")


@pytest.fixture
def registered():
    from mitmproxy.test import taddons

    regs = views.register(lambda: None)  # (no rules in force: another test's Disguise may have registered its own)
    with taddons.context() as tctx:  # mitmproxy 12 renders with ctx.options
        try:
            yield
        finally:
            tctx.master.event_loop.close()
            views.unregister(regs)


def test_contentviews_show_both_sides(session: Session, registered) -> None:
    f = by_model(read_flows(session.flows))["a-stream"]
    resp = view_text(f, f.response, "Disguise")
    assert "response as the client received it (restored)" in resp
    assert "── block 0 text · text" in resp and PROMPT in resp
    assert "masked 6 originals (ANTHROPIC_KEY×1, EMAIL×1, literals×4)" in resp
    up = view_text(f, f.response, "Disguise other side")
    assert "response as upstream sent it" in up
    assert "Zenith Labs asks: mail [EMAIL_1] and rotate [ANTHROPIC_KEY_1]. Zenith Labs thanks you." in up
    req = view_text(f, f.request, "Disguise other side")
    assert "request as the client sent it" in req and BOB in req
    diff = view_text(f, f.request, "Disguise diff")
    assert "-" in diff and "[EMAIL_1]" in diff


def test_contentview_is_chosen_automatically(session: Session, registered) -> None:
    f = by_model(read_flows(session.flows))["o-stream"]
    text = view_text(f, f.response, "auto")
    assert "── choice 0 content" in text and PROMPT in text


def test_contentview_with_the_rules_in_force_marks_the_originals_in_the_text(session: Session) -> None:
    """As mitmweb shows it: the views registered with the rules in force mark each
    original the client reads in a channel's whole text, chosen automatically. (The two
    tests above register none: another test's addon may have left its own in force.)"""
    from mitmproxy.test import taddons

    rules = Rules(mappings.load(session.mappings))
    regs = views.register(lambda: rules)
    try:
        with taddons.context() as tctx:
            f = by_model(read_flows(session.flows))["o-stream"]
            text = view_text(f, f.response, "auto")
            tctx.master.event_loop.close()
    finally:
        views.unregister(regs)
        views.register(lambda: None)
    assert "── choice 0 content" in text and "⟦Acme Corp⟧ asks: mail ⟦bob@corp.example.com⟧" in text
    assert PROMPT in text.replace("⟦", "").replace("⟧", "")


# -- 2. replay ---------------------------------------------------------------------------------


def test_offline_rerun_equals_the_live_run(session: Session, tmp_path: Path) -> None:
    out = tmp_path / "rerun.flows"
    rc, log = run_mitmdump([str(MITMDUMP), "-nr", str(session.flows), "--set", f"confdir={session.dir / 'conf'}",
                            "-s", str(ADDON), "--set", f"disguise_mappings={session.mappings}", "-w", str(out),
                            "--flow-detail", "3"])  # fmt: skip
    assert rc == 0, log
    # mitmdump prints bodies through the Disguise view
    assert "── block 0 text · text" in log and "response as the client received it" in log
    lines = [ln for ln in log.splitlines() if "] disguise: " in ln]
    assert sum("re-run offline: equals the live run" in ln for ln in lines) == 3, log
    assert "DIFFERS" not in log
    assert "re-run offline: the request still cannot be masked, as in the live run" in log
    live = read_flows(session.flows)
    again = {f.id: f for f in read_flows(out)}
    assert len(again) == len(live)
    for a in live:
        b = again[a.id]
        assert a.request.raw_content == b.request.raw_content
        if a.response is not None:
            assert a.response.raw_content == b.response.raw_content


def test_offline_rerun_reports_changed_mappings(session: Session, tmp_path: Path) -> None:
    m = write_mappings(tmp_path, {**MAPPINGS, "literals": {**MAPPINGS["literals"], "thanks": "cheers"}})
    rc, log = run_mitmdump([str(MITMDUMP), "-nr", str(session.flows), "--set", f"confdir={session.dir / 'conf'}",
                            "-s", str(ADDON), "--set", f"disguise_mappings={m}"])  # fmt: skip
    assert rc == 0, log
    assert "DIFFERS from the live run in the request" in log


def test_offline_run_of_a_session_recorded_without_the_addon_is_a_dry_run(plain: Session) -> None:
    rc, log = run_mitmdump([str(MITMDUMP), "-nr", str(plain.flows), "--set", f"confdir={plain.dir / 'conf'}",
                            "-s", str(ADDON), "--set", f"disguise_mappings={plain.mappings}"])  # fmt: skip
    assert rc == 0, log
    dry = [ln for ln in log.splitlines() if "dry run (recorded without the addon)" in ln]
    assert len(dry) == 3, log
    assert any("would mask 6 originals (ANTHROPIC_KEY×1, EMAIL×1, literals×4)" in ln for ln in dry)
    assert "would be refused" in log  # the fake gzip body
    for o in ORIGINALS:
        assert o not in log


def test_client_replay_masks_the_original_afresh(session: Session, tmp_path: Path) -> None:
    out = tmp_path / "replayed.flows"
    with FakeUpstream() as up:
        up.on("a-stream", anthropic_handler)
        up.on("a-whole", anthropic_handler)
        up.on("o-stream", lambda r: chat_handler(r, linger=0))
        up.on("/v1/models", other_handler)
        flows = [f for f in read_flows(session.flows) if f.response is None or f.response.status_code != 400]
        for f in flows:  # the recorded provider is gone: point the flows at this one
            f.request.port = up.port
        src = tmp_path / "src.flows"
        with open(src, "wb") as fo:
            w = io.FlowWriter(fo)
            for f in flows:
                w.add(f)
        rc, log = run_mitmdump([str(MITMDUMP), "-C", str(src), "--listen-host", "127.0.0.1", "--listen-port", "0", "--set", f"confdir={session.dir / 'conf'}",
                                "-s", str(ADDON), "--set", f"disguise_mappings={session.mappings}", "-w", str(out)])  # fmt: skip
        assert rc == 0, log
        got = {json.loads(r.body)["model"]: r.body for r in up.requests if r.path != "/v1/models"}
    live = by_model(read_flows(session.flows))
    replayed = by_model(read_flows(out))
    for model in ("a-stream", "a-whole", "o-stream"):
        # the provider got exactly the live masked request (same placeholders) ...
        assert got[model] == live[model].request.content
        # ... and the client side is restored as live
        a = sseview.parse_stream(live[model].response.content).channels if model != "a-whole" else None
        b = sseview.parse_stream(replayed[model].response.content).channels if model != "a-whole" else None
        if a is None:
            assert json.loads(replayed[model].response.content)["content"][0]["text"] == PROMPT
        else:
            assert {k: c.text for k, c in a.items()} == {k: c.text for k, c in b.items()}
        assert b"[EMAIL_1]" not in replayed[model].response.content
        assert replayed[model].metadata[META]["restored"] >= 2


def server_replay(tmp: Path, flows_file: Path, mappings: Path) -> tuple[dict[str, str], list[http.HTTPFlow]]:
    """Re-drive the clients against recorded provider answers; (what they read, flows)."""
    out = tmp / "server-replayed.flows"
    with FakeUpstream() as up:  # only for a port: server replay must not reach it
        md = Mitmdump(mitmdump_cmd(up.port, tmp / "conf", mappings, "-w", str(out), "--server-replay", str(flows_file),
                                   "--set", "server_replay_extra=kill", "--set", "connection_strategy=lazy",
                                   "--set", "keepserving=true", "--set", "server_replay_reuse=true",
                                   # the recorded provider listened on another port
                                   "--set", "server_replay_ignore_port=true"))  # fmt: skip
        try:
            got: dict[str, str] = {}
            with anthropic_client(md.port) as a, openai_client(md.port) as o:
                _drive_sdks(a, o, got)
        finally:
            md.stop()
        assert up.requests == [], "server replay reached the provider"
    return got, read_flows(out)


def test_server_replay_with_masking(session: Session, tmp_path: Path) -> None:
    """Recorded with the addon: the recorded upstream body is restored afresh with the
    new request's placeholders (not the recorded client side served again)."""
    got, flows = server_replay(tmp_path, session.flows, session.mappings)
    for k in ("anthropic.stream", "anthropic.tool", "anthropic.whole", "openai.stream"):
        assert got[k] == session.client[k]
    assert len(flows) == 3
    for f in flows:
        assert f.is_replay == "response"
        assert f.metadata[META]["replay"] == "server replay: recorded upstream body restored afresh"
        assert f.metadata[META]["restored"] >= 4


def test_server_replay_from_the_shared_copy(session: Session, tmp_path: Path) -> None:
    shared = tmp_path / "shared.flows"
    r = cli("share", str(session.flows), str(shared), mappings=session.mappings)
    assert r.returncode == 0, r.stderr
    got, flows = server_replay(tmp_path, shared, session.mappings)
    for k in ("anthropic.stream", "anthropic.tool", "anthropic.whole", "openai.stream"):
        assert got[k] == session.client[k]
    for f in flows:
        assert f.metadata[META]["replay"] == "server replay: body served as recorded"
        assert f.metadata[META]["restored"] >= 4


# -- 3. audit -----------------------------------------------------------------------------------


def test_audit_of_a_clean_session_passes(session: Session) -> None:
    r = cli("audit", str(session.flows), mappings=session.mappings)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "clean: 5 LLM flows audited, no leak" in r.stdout
    assert "refused by the addon: never sent" in r.stdout
    # an endpoint disguise does not transform went upstream: read too (issue 27)
    assert "GET /v1/models [not an API disguise transforms]: ok" in r.stdout and "other flow" not in r.stdout
    for o in ORIGINALS:
        assert o not in r.stdout


def test_audit_of_a_leaking_session_fails_and_names_fields(plain: Session) -> None:
    r = cli("audit", str(plain.flows), mappings=plain.mappings)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert "LEAK upstream: EMAIL match at messages[0].content" in out
    assert "LEAK upstream: ANTHROPIC_KEY match at messages[0].content" in out
    assert "LEAK upstream: literal (disguise 'crm_lookup') at tools[0].name" in out
    for o in ORIGINALS:
        assert o not in out  # the report names rules and fields, not originals
    shown = cli("audit", "--show-originals", str(plain.flows), mappings=plain.mappings).stdout
    assert BOB in shown and KEY in shown


def test_audit_finds_a_disguise_split_across_events(tmp_path: Path) -> None:
    """A provider answer the addon never saw: the client got "Zenith Labs" in pieces."""
    mpath = write_mappings(tmp_path, MAPPINGS)
    flows = tmp_path / "s.flows"

    def handler(rec):
        doc = rec.json
        return Reply(anthropic_stream(doc, "Thanks from Zenith Labs"), headers={"Content-Type": "text/event-stream"})

    with FakeUpstream() as up:
        up.on("a-stream", handler)
        cmd = mitmdump_cmd(up.port, tmp_path / "conf", mpath, "-w", str(flows))
        i = cmd.index("-s")
        del cmd[i : i + 4]
        md = Mitmdump(cmd)
        try:
            with anthropic_client(md.port) as a, a.messages.stream(
                model="a-stream", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
            ) as s:
                s.get_final_text()
        finally:
            md.stop()
    r = cli("audit", str(flows), mappings=mpath)
    assert r.returncode == 1
    assert "LEAK client: disguise 'Zenith Labs' at channel 'block 0 text' [12:23], split across events 7-10" in r.stdout


def test_audit_catches_a_host_left_unprotected(tmp_path: Path) -> None:
    """A real misconfiguration: disguise_hosts names another host, so this provider got
    the originals. The addon ran; the audit says what leaked. (In reverse mode such a
    disguise_hosts is refused at start-up: the proxy is a regular one here.)"""
    s = record(tmp_path, "--set", "disguise_hosts=api.anthropic.com", light=True, regular=True)
    r = cli("audit", str(s.flows), mappings=s.mappings)
    assert r.returncode == 1
    assert "not masked by the addon" in r.stdout
    assert "LEAK upstream: EMAIL match" in r.stdout


def test_audit_notes_disguises_in_thinking_without_failing(tmp_path: Path) -> None:
    rules = Rules(mappings.load(write_mappings(tmp_path, MAPPINGS)))
    body = b"".join([
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}\n\n',
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Zenith La"}}\n\n',
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"bs"}}\n\n',
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ])  # fmt: skip
    rec = audit.Record(1, "POST /v1/messages", "anthropic.messages", b"{}", body, "text/event-stream")
    rep = audit.audit([rec], rules)
    assert rep.exit_code() == 0 and rep.findings and not rep.leaks
    assert "signed thinking" in rep.text()


def test_audit_and_share_mitmproxy_commands(session: Session, tmp_path: Path) -> None:
    """The same from inside mitmproxy: `disguise.audit @all`, `disguise.share @all PATH`
    (mitmdump has no flow view to resolve @all: the script passes the flows)."""
    script = tmp_path / "run_audit.py"
    shared = tmp_path / "shared.flows"
    script.write_text(
        "from mitmproxy import ctx\n"
        "class A:\n"
        "    flows = []\n"
        "    def response(self, f):\n"
        "        self.flows.append(f)\n"
        "    def done(self):\n"
        "        print('AUDIT>>', ctx.master.commands.call('disguise.audit', self.flows))\n"
        f"        ctx.master.commands.call('disguise.share', self.flows, {str(shared)!r})\n"
        "addons = [A()]\n"
    )  # fmt: skip
    rc, out = run_mitmdump([str(MITMDUMP), "-nr", str(session.flows), "--set", f"confdir={session.dir / 'conf'}",
                            "-s", str(ADDON), "-s", str(script), "--set", f"disguise_mappings={session.mappings}"])  # fmt: skip
    assert rc == 0, out
    assert "AUDIT>>" in out and "clean: 5 LLM flows audited, no leak" in out
    assert "disguise.share: 3 flows written" in out
    r = cli("audit", str(shared), mappings=session.mappings)
    assert r.returncode == 0 and "clean: 3 LLM flows audited, no leak" in r.stdout


# -- 4. sharing -----------------------------------------------------------------------------------


def test_shared_copy_holds_only_the_provider_side(session: Session, tmp_path: Path) -> None:
    shared = tmp_path / "shared.flows"
    r = cli("share", str(session.flows), str(shared), mappings=session.mappings)
    assert r.returncode == 0, r.stderr
    assert "3 flows written" in r.stdout
    # said, not silently dropped (issue 27): the refused flow and the endpoint disguise does not transform
    assert "2 left out (1 refused by the addon, 1 not an API disguise transforms)" in r.stdout, r.stdout
    raw = shared.read_bytes()
    for secret in [*ORIGINALS, "sk-ant-test-credential", "test-credential"]:
        assert secret.encode() not in raw, secret
    flows = by_model(read_flows(shared))
    f = flows["a-stream"]
    assert SIDES not in f.metadata and f.metadata[META]["shared"]
    assert "x-api-key" not in f.request.headers
    assert f.response.content == read_flows(session.flows)[0].metadata[SIDES]["upstream_response"]["content"]
    assert any(d.encode() in f.response.content for d in DISGUISES)
    a = cli("audit", str(shared), mappings=session.mappings)
    assert a.returncode == 0, a.stdout
    assert "clean: 3 LLM flows audited, no leak" in a.stdout


def test_audit_of_a_shared_copy_fails_on_any_original(session: Session, tmp_path: Path) -> None:
    shared = tmp_path / "shared.flows"
    assert cli("share", str(session.flows), str(shared), mappings=session.mappings).returncode == 0
    flows = read_flows(shared)
    whole = by_model(flows)["a-whole"]
    whole.response.content = whole.response.content.replace(b"Zenith Labs", b"Acme Corp", 1)
    by_model(flows)["o-stream"].request.headers["authorization"] = "Bearer x"
    bad = tmp_path / "bad.flows"
    with open(bad, "wb") as fo:
        w = io.FlowWriter(fo)
        for f in flows:
            w.add(f)
    r = cli("audit", str(bad), mappings=session.mappings)
    assert r.returncode == 1
    assert "LEAK shared: literal (disguise 'Zenith Labs') at response content[0].text [0:9]" in r.stdout
    assert "LEAK shared: credential header at request header 'authorization'" in r.stdout


def test_share_refuses_to_write_a_copy_that_fails_the_audit(session: Session, tmp_path: Path) -> None:
    flows = read_flows(session.flows)
    f = by_model(flows)["a-whole"]
    up = f.metadata[SIDES]["upstream_response"]
    up["content"] = up["content"].replace(b"Zenith Labs", b"Acme Corp")  # the model said an original
    out = tmp_path / "shared.flows"
    rules = Rules(mappings.load(session.mappings))
    with pytest.raises(flowfile.ShareError, match="would not pass the audit"):
        flowfile.write_shared(flows, str(out), rules)
    assert not out.exists() and not list(tmp_path.glob(".disguise-share-*"))


def test_refused_gzip_request_body_is_not_in_the_upstream_side(session: Session) -> None:
    f = [f for f in read_flows(session.flows) if f.response and f.response.status_code == 400][0]
    assert flowfile.record(1, f).sent is None


def test_show_prints_every_side_without_a_browser(session: Session) -> None:
    r = cli("show", str(session.flows), mappings=session.mappings)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.count("===== flow") == 4 * 4  # 4 LLM flows x request/response x two views
    assert "other side: response as upstream sent it" in out and "[EMAIL_1]" in out and BOB in out
