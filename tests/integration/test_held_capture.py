"""Capture memory through a real mitmdump (issue 29, inspect/held.py): a finished stream's
body, as the client got it, is held compressed on flow.response inside mitmdump; the flow
file (`-w`) holds the very bytes the client read, with the headers it got, and the
Disguise contentview shows the same text live and from the file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from mitmproxy import io
from mitmproxy.test import taddons

from disguiselib.config import build_config
from inspect_util import BOB, MAPPINGS, anthropic_handler
from integration_util import MITMDUMP, FakeUpstream, Mitmdump, clean_env, http_post, mitmdump_cmd, write_mappings
from views_util import registered, shown

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]

# Loaded after the addon: what mitmdump itself holds once the addon's response hook ran.
PROBE = '''
import hashlib, json, os
from mitmproxy import contentviews
from disguiselib.inspect import held

def shown(f):
    if hasattr(contentviews, "Contentview"):
        return contentviews.prettify_message(f.response, f, "disguise").text
    _, lines, err = contentviews.get_message_content_view("Disguise", f.response, f)
    return "\\n".join("".join(t for _, t in line) for line in lines)

class Probe:
    def response(self, flow):
        kept = vars(flow.response.data)["content"]
        rec = {"held": held.is_held(flow.response), "size": len(flow.response.raw_content),
               "holds": kept.nbytes() if held.is_held(flow.response) else len(kept or b""),
               "sha": hashlib.sha256(flow.response.raw_content).hexdigest(), "view": shown(flow)}
        with open(os.environ["PROBE_OUT"], "a") as f:
            f.write(json.dumps(rec) + "\\n")

addons = [Probe()]
'''


def test_a_finished_stream_is_held_compressed_and_the_file_and_the_view_read_what_the_client_got(tmp_path: Path) -> None:
    maps = write_mappings(tmp_path, MAPPINGS)
    probe, out, flows = tmp_path / "probe.py", tmp_path / "probe.jsonl", tmp_path / "s.flows"
    probe.write_text(PROBE)
    prompt = f"Acme Corp asks: mail {BOB} about the launch plan. " * 40
    body = json.dumps({"model": "m", "max_tokens": 20, "stream": True, "messages": [{"role": "user", "content": prompt}]})
    with FakeUpstream() as up:
        up.on("m", anthropic_handler)
        env = {**clean_env(), "PROBE_OUT": str(out)}
        md = Mitmdump(mitmdump_cmd(up.port, tmp_path / "conf", maps, "-s", str(probe), "-w", str(flows)), env=env)
        try:
            status, headers, got = http_post(md.port, "/v1/messages", body.encode(), {"x-api-key": "sk-ant-test"})
        finally:
            md.stop()
    assert status == 200 and headers["content-type"].startswith("text/event-stream"), md.output
    assert BOB in got.decode() and "[EMAIL_1]" not in got.decode()  # restored: what the client reads
    [live] = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert live["held"] and live["size"] == len(got) and live["holds"] * 4 < len(got), live  # held compressed
    assert live["sha"] == hashlib.sha256(got).hexdigest()
    with flows.open("rb") as fh:
        [g] = list(io.FlowReader(fh).stream())
    assert g.response.raw_content == got and "content-encoding" not in g.response.headers
    assert "content-encoding" not in headers
    cfg = build_config([str(maps)], True, [])
    with taddons.context() as tctx, registered(cfg):  # the rules mitmdump ran with, from the same file
        try:
            assert shown(g, g.response, "Disguise", unwrapped=False) == live["view"]
        finally:
            tctx.master.event_loop.close()
