# ruff: noqa: F811 - the tests take test_addon's `addon` fixture, imported by its name
"""unknown.check, in-process through the addon: an endpoint disguise does not transform,
on a protected host, leaves only without an original, or where the user allowed it
(tests/integration/test_leaks_outside.py and test_failclosed.py go through real mitmdump)."""

from __future__ import annotations

import json
import logging

from disguiselib.mitm.addon import Disguise
from disguiselib.state import Passed, Phase

from .test_addon import addon, messages_flow  # noqa: F401 - the fixture, shared


def _flow(body: dict, path: str = "/v1/skills"):
    return messages_flow(json.dumps(body).encode(), path)


def _run(a: Disguise, tctx, f) -> None:
    pending = a.request(f)
    if pending is not None:
        tctx.master.event_loop.run_until_complete(pending)


def test_an_original_is_refused_naming_the_place_never_the_text(addon, caplog) -> None:
    a, tctx = addon
    f = _flow({"display_title": "Acme Corp notes"})
    with caplog.at_level(logging.WARNING, logger="disguise"):
        _run(a, tctx, f)
    assert f.response is not None and f.response.status_code == 400
    assert b"Acme" not in f.response.content and "Acme" not in caplog.text
    assert "disguise_allow_unknown" in caplog.text
    assert a.guard.records[f.id].phase is Phase.REFUSED


def test_a_body_without_an_original_leaves_as_it_came_scanned(addon) -> None:
    a, tctx = addon
    f = _flow({"display_title": "weekly notes"})
    raw = f.request.raw_content
    _run(a, tctx, f)
    rec = a.guard.records[f.id]
    assert f.response is None and f.request.raw_content == raw
    assert rec.passed is Passed.SCANNED and rec.phase is Phase.PASSED
    assert rec.checked_body == raw  # the Guard looks again if it changes after this


def test_allowed_an_original_is_forwarded_and_marked(addon, caplog) -> None:
    a, tctx = addon
    tctx.options.disguise_allow_unknown = True
    f = _flow({"display_title": "Acme Corp notes"})
    with caplog.at_level(logging.WARNING, logger="disguise"):
        _run(a, tctx, f)
    rec = a.guard.records[f.id]
    assert f.response is None and rec.passed is Passed.SCANNED
    assert "forwarded (disguise_allow_unknown)" in caplog.text and "Acme" not in caplog.text
