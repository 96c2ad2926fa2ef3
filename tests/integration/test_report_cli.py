"""`disguise report` on a session a real mitmdump recorded (the official anthropic SDK as
the client: streams, whole answers, requests refused and passed on endpoints disguise
does not transform, an original planted in a refused request's URL), rendered by a real
headless Chromium from the distribution's packages (.ci/run installs it): the page
renders, its charts hold the session's figures, it fetches nothing, and no planted
original reaches it — in the HTML written or in the DOM the browser built."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from inspect_util import anthropic_handler
from integration_util import MITMDUMP, REPO, FakeUpstream, Mitmdump, Recorded, Reply, mitmdump_cmd, write_mappings

anthropic = pytest.importorskip("anthropic")

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not MITMDUMP.exists(), reason=f"no mitmdump at {MITMDUMP}"),
]
NEEDS_CHROMIUM = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium here (apt-get install -y chromium; .ci/run installs it before the tests)",
)

MINE = {
    "literals": {"Acme Corp": "Zenith Labs"},
    "patterns": [{"name": "EMAIL", "regex": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"}],
}
STREAMS, WHOLE, REFUSED, PASSED = 4, 2, 2, 1


def prompt(i: int) -> str:
    return f"Acme Corp case {i}: write to agent{i}@planted.example.org"


PLANTED = ["Acme Corp", "planted.example.org", *(f"agent{i}@" for i in range(20)), "url-agent@planted"]


def files_handler(rec: Recorded) -> Reply:
    return Reply([b'{"id": "file_1", "type": "file"}'], headers={"content-type": "application/json"},
                 framing="length")  # fmt: skip


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    mine = write_mappings(tmp, MINE, "mine.yaml")
    flows = tmp / "session.flows"
    with FakeUpstream() as up:
        up.on("m", anthropic_handler)
        up.on("/v1/files", files_handler)
        md = Mitmdump(mitmdump_cmd(up.port, tmp / "conf", mine, "-w", str(flows), "--set", "disguise_defaults=false"))
        try:
            with anthropic.Anthropic(base_url=f"http://127.0.0.1:{md.port}", api_key="sk-ant-test", max_retries=0,
                                     http_client=anthropic.DefaultHttpxClient(trust_env=False)) as a:  # fmt: skip
                for i in range(STREAMS):
                    with a.messages.stream(model="m", max_tokens=20,
                                           messages=[{"role": "user", "content": prompt(i)}]) as s:  # fmt: skip
                        s.get_final_message()
                for i in range(STREAMS, STREAMS + WHOLE):
                    a.messages.create(model="m", max_tokens=20, messages=[{"role": "user", "content": prompt(i)}])
                with pytest.raises(anthropic.BadRequestError):  # an original in the body
                    a.post("/v1/files", cast_to=object, body={"purpose": "x", "note": prompt(10)})
                with pytest.raises(anthropic.BadRequestError):  # an original in the URL's path
                    a.post("/v1/files/url-agent@planted.example.org", cast_to=object, body={"purpose": "y"})
                assert a.post("/v1/files", cast_to=object, body={"purpose": "clean"})["id"] == "file_1"
        finally:
            md.stop()
    assert flows.stat().st_size > 0, md.output
    return flows


@pytest.fixture(scope="module")
def recorded_before(session: Path) -> Path:
    """The session as a version of disguise before the refused URL was withheld in the
    flow wrote it: the refused request's URL holds its original, which the report must
    name by its rule."""
    from mitmproxy import io as mio

    with open(session, "rb") as f:
        flows = list(mio.FlowReader(f).stream())
    withheld = [fl for fl in flows if "<original>" in getattr(getattr(fl, "request", None), "path", "")]
    assert len(withheld) == 1, [getattr(getattr(fl, "request", None), "path", None) for fl in flows]
    withheld[0].request.path = "/v1/files/url-agent@planted.example.org"  # type: ignore[attr-defined]
    old = session.parent / "before.flows"
    with open(old, "wb") as f:
        w = mio.FlowWriter(f)
        for fl in flows:
            w.add(fl)
    return old


def report(flows: Path, out: Path) -> subprocess.CompletedProcess:
    """`python -m disguiselib report` from the checkout, as the README writes it."""
    return subprocess.run([sys.executable, "-m", "disguiselib", "report", str(flows), "-o", str(out),
                           "--mappings", str(flows.parent / "mine.yaml"), "--no-defaults"],
                          cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": "addon", "PATH": os.environ.get("PATH", "/usr/bin:/bin")})  # fmt: skip


def chromium(*args: str) -> str:
    assert CHROMIUM is not None
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-dev-shm-usage", *args], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_the_report_is_written_self_contained_and_without_an_original(session: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    r = report(session, out)
    assert r.returncode == 0, r.stderr  # the audit's verdict: clean
    assert f"report written to {out}: clean" in r.stdout
    page = out.read_text(encoding="utf-8")
    for o in PLANTED:
        assert o not in page, o
    # nothing fetched: no URL but the SVG namespace, no src/href/url()/@import
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) == {"http://www.w3.org/2000/svg"}
    assert not re.search(r"\b(src|href)\s*=|url\(|@import", page, re.I)
    assert "Content-Security-Policy" in page and "default-src 'none'" in html.unescape(page)
    assert "POST /&lt;original&gt;" in page  # the refused URL, as the flow keeps it: withheld


def test_a_refused_url_recorded_with_its_original_is_named_by_its_rule(recorded_before: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    r = report(recorded_before, out)
    assert r.returncode == 0, r.stderr
    page = out.read_text(encoding="utf-8")
    for o in PLANTED:
        assert o not in page, o
    assert "/v1/files/[EMAIL]" in page  # the refused URL's original, named by its rule


def test_the_default_output_is_beside_the_flow_file(session: Path, tmp_path: Path) -> None:
    copy = tmp_path / "s.flows"
    shutil.copy(session, copy)
    r = subprocess.run([sys.executable, "-m", "disguiselib", "report", str(copy), "--mappings",
                        str(session.parent / "mine.yaml"), "--no-defaults"], cwd=REPO, capture_output=True,
                       text=True, timeout=120, env={"PYTHONPATH": "addon", "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "s.report.html").exists()


@NEEDS_CHROMIUM
def test_headless_chromium_renders_the_charts_with_the_sessions_figures(session: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    assert report(session, out).returncode == 0
    dom = chromium("--dump-dom", out.as_uri())
    assert dom.startswith("<!DOCTYPE html>\n<html") and "disguise report" in dom
    for o in PLANTED:
        assert o not in dom, o
    # the inline script ran after layout: every bar was drawn with a size
    drawn = int(re.search(r'data-bars-drawn="(\d+)"', dom).group(1))  # type: ignore[union-attr]
    bars = re.findall(r'<rect class="bar" data-series="([^"]+)" data-label="([^"]+)" data-value="(\d+)"', dom)
    assert drawn == len(bars) > 0

    def chart(name: str) -> list[tuple[str, str, int]]:
        body = dom.split(f'data-chart="{name}"', 1)[1].split("</svg>", 1)[0]
        return [(s, lab, int(v)) for s, lab, v in
                re.findall(r'data-series="([^"]+)" data-label="([^"]+)" data-value="(\d+)"', body)]  # fmt: skip

    by_api = chart("by-api")
    assert ("masked", "anthropic.messages", STREAMS + WHOLE) in by_api
    # /v1/files is OpenAI's route (its body model takes batches only: scanned); /v1/files/... no API's
    assert {(s, lab) for s, lab, _ in by_api if s != "masked"} == {
        ("refused", "openai.files"), ("passed", "openai.files"), ("refused", "unknown endpoint")}
    assert sum(v for s, _, v in by_api if s == "refused") == REFUSED
    assert sum(v for s, _, v in by_api if s == "passed") == PASSED
    by_rule = chart("by-rule")
    assert ("literal", "literals", STREAMS + WHOLE) in by_rule and ("pattern", "EMAIL", STREAMS + WHOLE) in by_rule
    hours = chart("per-hour")
    assert sum(v for s, _, v in hours if s == "masked") == STREAMS + WHOLE
    assert sum(v for s, _, v in hours if s == "refused") == REFUSED
    assert 'id="verdict" data-exit="0"' in dom and "clean:" in dom
    refused = dom.split('id="refused"', 1)[1].split("</table>", 1)[0]
    assert refused.count("<tr>") == 1 + REFUSED  # the header and one row each
    assert "not an endpoint disguise transforms" in refused and "EMAIL in" in refused
    assert "POST /&lt;original&gt;" in refused  # the refused URL as the flow keeps it
    shot = tmp_path / "report.png"
    chromium(f"--screenshot={shot}", "--window-size=1280,1800", "--hide-scrollbars", out.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_a_page_the_rules_still_find_an_original_in_is_not_written(
    recorded_before: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """Fail closed: with the redaction broken, the last look at the page refuses it and
    nothing (not even a temporary file) is left behind (a session whose refused URL
    still holds its original: recorded before such URLs were withheld)."""
    session = recorded_before
    from disguiselib import cli
    from disguiselib.inspect import report as rep

    monkeypatch.setattr(rep.Redact, "__call__", lambda self, text: str(text))
    out = tmp_path / "report.html"
    with pytest.raises(SystemExit) as e:
        cli.main(["report", str(session), "-o", str(out), "--mappings", str(session.parent / "mine.yaml"),
                  "--no-defaults"])  # fmt: skip
    assert e.value.code == cli.ERROR
    assert "the page would hold originals (EMAIL" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
