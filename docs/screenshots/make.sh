#!/usr/bin/env bash
# Screenshots of mitmweb 11 and 12 showing a restored stream in the Disguise view:
# docs/screenshots/mitmweb-11.png and mitmweb-12.png.
#
#   bash docs/screenshots/make.sh            # both, where each virtual environment exists
#   VENVS=.venv bash docs/screenshots/make.sh  # mitmproxy 11 only
#
# Needs: `make test` and `make test PY=python3.12` run once (the .venv and .venv312
# virtual environments, with the anthropic SDK), and Debian's Chromium and the emoji
# font for the flow-list marker:
#   apt-get install -y chromium fonts-noto-color-emoji
# Everything runs on 127.0.0.1: the stand-in provider (examples/echo_provider.py), mitmweb
# with the addon in reverse mode, the official anthropic SDK as the client, and headless
# Chromium opening the flow's Response tab. The temporary folder (mitmproxy's CA, logs)
# is removed on exit, failure included.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=docs/screenshots
VENVS=${VENVS:-".venv .venv312"}
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$CHROMIUM" ] || { echo "no chromium: apt-get install -y chromium fonts-noto-color-emoji" >&2; exit 1; }
unset http_proxy https_proxy all_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY NO_PROXY no_proxy

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 300); do
    python3 -c "import socket, sys; socket.create_connection(('127.0.0.1', $1), 0.2).close()" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on 127.0.0.1:$1" >&2
  return 1
}

# The shipped defaults plus the example literals, merged from one folder.
mkdir -p "$WORK/mappings"
cp mappings/default.yaml examples/literals.yaml "$WORK/mappings/"

PROMPT='Acme Corp asks: mail jane.doe@example.com about Project Bluebird.

The build runs on build01.acme-corp.internal; call acme_customer_lookup with the session_id.'

for venv in $VENVS; do
  [ -x "$venv/bin/mitmweb" ] || { echo "skipped $venv: no mitmweb there (make test first)"; continue; }
  version=$("$venv/bin/python" -c 'from mitmproxy.version import VERSION; print(VERSION.split(".")[0])')
  provider=$(free_port); proxy=$(free_port); web=$(free_port); token=$(python3 -c 'import secrets; print(secrets.token_hex(8))')
  "$venv/bin/python" examples/echo_provider.py --port "$provider" 2>>"$WORK/provider.log" &
  PIDS+=($!)
  wait_port "$provider"
  "$venv/bin/mitmweb" --mode "reverse:http://127.0.0.1:$provider" --listen-host 127.0.0.1 --listen-port "$proxy" \
    --web-host 127.0.0.1 --web-port "$web" --no-web-open-browser --set web_password="$token" \
    --set confdir="$WORK/conf$version" -s addon/disguise.py --set disguise_mappings="$WORK/mappings" \
    >>"$WORK/mitmweb$version.log" 2>&1 &
  PIDS+=($!)
  wait_port "$proxy"
  wait_port "$web"

  # A streamed answer restored by the addon, and a request it refuses (a body that says
  # gzip and is not): the flow list shows each one's marker.
  "$venv/bin/python" - "http://127.0.0.1:$proxy" "$PROMPT" <<'PY'
import sys, urllib.request

import anthropic

client = anthropic.Anthropic(base_url=sys.argv[1], api_key="sk-ant-screenshot-not-a-real-key", max_retries=0,
                             http_client=anthropic.DefaultHttpxClient(trust_env=False))
with client.messages.stream(model="claude-sonnet-4-5", max_tokens=200,
                            messages=[{"role": "user", "content": sys.argv[2]}]) as s:
    assert s.get_final_text() == sys.argv[2], "the client did not get its originals back"
req = urllib.request.Request(f"{sys.argv[1]}/v1/messages", data=b"not gzip", method="POST",
                             headers={"content-type": "application/json", "content-encoding": "gzip"})
try:
    urllib.request.urlopen(req, timeout=10)
    sys.exit("the broken request was not refused")
except urllib.error.HTTPError as e:
    assert e.code == 400, e.code
PY

  id=$("$venv/bin/python" - "$web" "$token" <<'PY'
import json, sys, time, urllib.request

for _ in range(100):  # the flow list is written once the response hook ran
    with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/flows?token={sys.argv[2]}", timeout=10) as r:
        flows = [f for f in json.load(r) if f["request"]["path"] == "/v1/messages" and f.get("response")
                 and f["response"]["status_code"] == 200 and f.get("comment")]
    if flows:
        print(flows[0]["id"])
        break
    time.sleep(0.1)
else:
    sys.exit("no restored flow in mitmweb")
PY
)
  shot="$OUT/mitmweb-$version.png"
  "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$WORK/chromium$version" --hide-scrollbars \
    --window-size=1400,1100 --virtual-time-budget=8000 --screenshot="$shot" \
    "http://127.0.0.1:$web/?token=$token#/flows/$id/response" >>"$WORK/chromium.log" 2>&1
  echo "mitmproxy $version: $shot"
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  PIDS=()
done
