"""mitm/heap.py: what is alive when the addon loads is frozen once per process, after a
collection (so no garbage is kept). The effect through a real mitmdump (its startup
heap frozen) is in tests/integration/test_pause.py."""

from __future__ import annotations

import gc

from disguiselib.mitm import heap


def test_what_is_alive_at_load_is_frozen_once_after_a_collection(monkeypatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(heap, "_frozen", False)
    monkeypatch.setattr(gc, "collect", lambda *a: calls.append("collect") or 0)
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    assert heap.freeze_startup() is True
    assert heap.freeze_startup() is False  # a script reload: flows in flight would be frozen
    assert calls == ["collect", "freeze"]


def test_loading_the_addon_freezes(monkeypatch) -> None:
    from mitmproxy.test import taddons

    from disguiselib.mitm.addon import Disguise

    frozen: list[bool] = []
    monkeypatch.setattr(heap, "_frozen", False)
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(True))
    a = Disguise()
    with taddons.context(a) as tctx:
        tctx.master.event_loop.close()
    assert frozen == [True]
