"""The Guard's last look (mitm/guard.py) knows the request's originals: a later addon that
puts a copy of one the body gave its key into a header or the URL is refused."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from mitmproxy.addons.proxyserver import Proxyserver
from mitmproxy.http import Headers
from mitmproxy.test import taddons, tflow

from disguiselib.mitm.addon import Disguise

COPY = "hunter2xyz9Q"
MAPPING = r"""
patterns:
  - name: PASSWORD
    regex: 'password=(?P<v>[A-Za-z0-9]{8,})'
    group: v
"""
BODY = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": f"password={COPY}"}]}).encode()


@contextlib.contextmanager
def configured(tmp_path: Path):
    (tmp_path / "m.yaml").write_text(MAPPING)
    a = Disguise()
    with taddons.context(Proxyserver(), a) as tctx:
        try:
            tctx.configure(a, disguise_mappings=[str(tmp_path / "m.yaml")], disguise_defaults=False)
            yield a
        finally:
            tctx.master.event_loop.close()


def masked(a: Disguise):
    f = tflow.tflow()
    f.request.method, f.request.path, f.request.host = "POST", "/v1/messages", "api.anthropic.com"
    f.request.content = BODY
    f.request.headers["content-type"] = "application/json"
    a.requestheaders(f)
    a.guard.requestheaders(f)
    assert a.request(f) is None
    assert f.response is None and COPY.encode() not in f.request.content
    return f


@pytest.mark.parametrize("where", ["header x-note", "url"])
def test_a_copy_a_later_addon_adds_is_refused(tmp_path: Path, where: str) -> None:
    with configured(tmp_path) as a:
        f = masked(a)
        if where == "url":
            f.request.path += f"?note={COPY}"  # another addon
        else:
            f.request.headers["x-note"] = f"see {COPY}"
        a.guard.request(f)
        assert f.response is not None and f.response.status_code == 400
        msg = json.loads(f.response.content)["error"]["message"]
        assert msg == f"disguise: request refused by the leak guard: an original (PASSWORD in {where}) would have left unmasked"


def test_a_header_without_a_copy_passes(tmp_path: Path) -> None:
    with configured(tmp_path) as a:
        f = masked(a)
        f.request.headers["x-note"] = "nothing here"
        a.guard.request(f)
        assert f.response is None


def test_a_trailer_holding_a_copy_is_dropped_and_the_request_refused(tmp_path: Path) -> None:
    with configured(tmp_path) as a:
        f = masked(a)
        f.request.trailers = Headers([(b"x-note", f"see {COPY}".encode())])
        a.guard.request(f)
        assert f.response is not None and f.request.trailers is None
        msg = json.loads(f.response.content)["error"]["message"]
        assert msg == "disguise: request refused by the leak guard: an original (PASSWORD in trailer x-note) would have left unmasked"
