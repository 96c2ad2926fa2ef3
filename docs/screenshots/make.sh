#!/usr/bin/env bash
# Screenshots of mitmweb 11 and 12: a restored stream in the Disguise view
# (docs/screenshots/mitmweb-11.png, mitmweb-12.png) and a request the addon refused on
# an endpoint it does not transform, its Disguise view saying it was never sent
# (refused-11.png, refused-12.png).
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
VENVS=${VENVS:-".venv .venv312"}  # e.g. VENVS="/work/main/.venv /work/main/.venv312"
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

  # A streamed answer restored by the addon, and a request it refuses (an OpenAI file
  # upload that is no batch, holding an e-mail: an endpoint disguise does not transform):
  # the flow list shows each one's marker.
  "$venv/bin/python" - "http://127.0.0.1:$proxy" "$PROMPT" <<'PY'
import sys, urllib.request

import anthropic

client = anthropic.Anthropic(base_url=sys.argv[1], api_key="sk-ant-screenshot-not-a-real-key", max_retries=0,
                             http_client=anthropic.DefaultHttpxClient(trust_env=False))
with client.messages.stream(model="claude-sonnet-4-5", max_tokens=200,
                            messages=[{"role": "user", "content": sys.argv[2]}]) as s:
    assert s.get_final_text() == sys.argv[2], "the client did not get its originals back"
upload = (b'--b0\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nassistants\r\n'
          b'--b0\r\nContent-Disposition: form-data; name="file"; filename="notes.txt"\r\n'
          b"Content-Type: text/plain\r\n\r\nwrite to jane.doe@example.com\r\n--b0--\r\n")
req = urllib.request.Request(f"{sys.argv[1]}/v1/files", data=upload, method="POST",
                             headers={"content-type": "multipart/form-data; boundary=b0"})
try:
    urllib.request.urlopen(req, timeout=10)
    sys.exit("the broken request was not refused")
except urllib.error.HTTPError as e:
    assert e.code == 400, e.code
PY

  find_flow() {  # $1: path, $2: status; the flow list is written once the response hook ran
    "$venv/bin/python" - "$web" "$token" "$1" "$2" <<'PY'
import json, sys, time, urllib.request

for _ in range(100):
    with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/flows?token={sys.argv[2]}", timeout=10) as r:
        flows = [f for f in json.load(r) if f["request"]["path"] == sys.argv[3] and f.get("response")
                 and f["response"]["status_code"] == int(sys.argv[4]) and f.get("comment")]
    if flows:
        print(flows[0]["id"])
        break
    time.sleep(0.1)
else:
    sys.exit(f"no {sys.argv[3]} flow with status {sys.argv[4]} in mitmweb")
PY
  }
  shoot() {  # $1: the PNG, $2: the page's fragment
    "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
      --disable-component-update --disable-sync --user-data-dir="$WORK/chromium$version" --hide-scrollbars \
      --window-size=1400,1100 --virtual-time-budget=8000 --screenshot="$1" \
      "http://127.0.0.1:$web/?token=$token#$2" >>"$WORK/chromium.log" 2>&1
    echo "mitmproxy $version: $1"
  }
  id=$(find_flow /v1/messages 200)
  shoot "$OUT/mitmweb-$version.png" "/flows/$id/response"
  id=$(find_flow /v1/files 400)
  shoot "$OUT/refused-$version.png" "/flows/$id/request"
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  PIDS=()
done
