"""Faults a proxy shared by a team meets (issue 27), black-box through a real mitmdump in
front of a fake upstream on 127.0.0.1: a mapping file rewritten in place while requests
run, and a compressed response that expands without bound."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from integration_util import FakeUpstream, Mitmdump, Recorded, Reply, http_post, mitmdump_cmd

ORIGINALS = ("Acme Corp", "Bluebird", "Project Kestrel", "Osprey Ltd", "Harrier Bank")
FULL = "".join(
    ["literals:\n"] + [f"  {o}: {d}\n" for o, d in zip(ORIGINALS, ("Zenith Labs", "Heronwing", "Falconry",
                                                                   "Gannetworks", "Plover Trust"))]
)  # fmt: skip
TEXT = ", ".join(ORIGINALS)


def body(text: str = TEXT) -> bytes:
    return json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": text}]}).encode()


def echo(rec: Recorded) -> Reply:
    text = json.dumps(rec.json.get("messages"))
    doc = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": text}]}
    return Reply([json.dumps(doc).encode()], headers={"content-type": "application/json"}, framing="length")


def leaked(up: FakeUpstream) -> int:
    return sum(1 for r in list(up.requests) for o in ORIGINALS if o.encode() in r.body + r.raw)


def rewrite(m: Path, text: str, pause: float = 0.0) -> None:
    """In place, as `cat new > file` and most editors do: truncate, then write (in two
    pieces `pause` apart: a slow writer)."""
    with open(m, "r+") as fh:
        fh.truncate(0)
        fh.flush()
        half = len(text) // 2
        fh.write(text[:half])
        fh.flush()
        time.sleep(pause)
        fh.write(text[half:])


def start(up: FakeUpstream, tmp: Path, m: Path, *extra: str) -> Mitmdump:
    return Mitmdump(mitmdump_cmd(up.port, tmp / "conf", m, "--set", "disguise_defaults=false", *extra))


def test_a_mapping_file_rewritten_in_place_never_lets_an_original_out(tmp_path: Path) -> None:
    """Issue 27: `cat new.yaml > local.yaml` while 100-300 requests ran sent 4-11 of them
    upstream with the dropped originals in clear; a truncated file and a file cut after
    its first literal each let the others' originals out."""
    m = tmp_path / "local.yaml"
    m.write_text(FULL)
    with FakeUpstream() as up:
        up.on("m", echo)
        proxy = start(up, tmp_path, m)
        try:
            port = proxy.port
            assert port is not None
            assert http_post(port, "/v1/messages", body())[0] == 200
            # deterministic: the file as a reader finds it between truncate and write
            for half in ("", "literals:\n  Acme Corp: Zenith Labs\n", FULL[: FULL.index("Project")]):
                rewrite(m, half)
                status, _, answer = http_post(port, "/v1/messages", body())
                assert status == 200 and leaked(up) == 0, half
                assert all(o in answer.decode() for o in ORIGINALS)  # restored
            assert "would drop" in proxy.output and "Kestrel" not in proxy.output
            # concurrent: writers rewrite in place while clients send
            stop = threading.Event()
            errors: list[str] = []

            def writer() -> None:
                while not stop.is_set():
                    rewrite(m, FULL, pause=0.02)
                    time.sleep(0.03)

            def client() -> None:
                while not stop.is_set():
                    try:
                        status, _, _ = http_post(port, "/v1/messages", body())
                        if status != 200:
                            errors.append(str(status))
                    except OSError as e:
                        errors.append(type(e).__name__)

            threads = [threading.Thread(target=writer)] + [threading.Thread(target=client) for _ in range(4)]
            n0 = len(up.requests)
            for t in threads:
                t.start()
            time.sleep(5)
            stop.set()
            for t in threads:
                t.join(30)
            m.write_text(FULL)
            assert len(up.requests) - n0 >= 20, "too few requests to mean anything"
            assert leaked(up) == 0
            assert not errors
        finally:
            proxy.stop()
            print(proxy.output[-4000:])
