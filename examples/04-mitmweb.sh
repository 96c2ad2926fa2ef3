#!/usr/bin/env bash
# Walkthrough 4: inspecting a flow in mitmweb.
#
#   mitmweb --mode reverse:https://api.anthropic.com -s addon/disguise.py
#
# Open http://127.0.0.1:8081, click the flow. Its comment says what was masked and
# restored ("masked 3 originals (EMAIL×1, literals×2); restored 3 originals"). The Request and Response tabs
# open in the "Disguise" view: the request as it went upstream, the response as the
# client received it, an SSE body as its events plus the reassembled text of each
# channel. Pick "Disguise other side" in the view menu for the request as the client
# sent it and the response as the provider sent it, or "Disguise diff" for both at once.
# (mitmproxy 12 asks for a token: here it is fixed with web_password.)
#
# This script does the same through mitmweb's HTTP API and prints what you would see.
source "$(dirname "$0")/lib.sh"

port_free "$PROXY_PORT" PROXY_PORT
port_free "$WEB_PORT" WEB_PORT
start_provider
"$MITMWEB" --mode "reverse:http://127.0.0.1:$PROVIDER_PORT" --listen-host 127.0.0.1 --listen-port "$PROXY_PORT" \
  --web-host 127.0.0.1 --web-port "$WEB_PORT" --no-web-open-browser --set web_password=walkthrough \
  --set confdir="$WORK/conf" -s addon/disguise.py --set disguise_mappings="$MAPPINGS" >>"$WORK/mitmweb.log" 2>&1 &
PIDS+=($!)
wait_port "$PROXY_PORT" "$!"
wait_port "$WEB_PORT" "$!"

export ANTHROPIC_BASE_URL=http://127.0.0.1:$PROXY_PORT
export ANTHROPIC_API_KEY=${ANTHROPIC_API_KEY:-sk-ant-walkthrough-not-a-real-key}
show "the client asks"
"$PYTHON" examples/clients/ask_anthropic.py "Acme Corp asks: mail jane.doe@example.com about Project Bluebird."

"$PYTHON" - "$WEB_PORT" <<'PY'
import json, sys, urllib.parse, urllib.request

base = f"http://127.0.0.1:{sys.argv[1]}"
def get(path):
    with urllib.request.urlopen(f"{base}{path}?token=walkthrough", timeout=10) as r:
        return json.load(r)

flow = [f for f in get("/flows") if f["request"]["path"].startswith("/v1/messages")][-1]
print(f"\n== mitmweb's flow list: {flow['request']['method']} {flow['request']['path']}  comment: {flow.get('comment')}")
for message, view in (("request", "Disguise"), ("request", "Disguise other side"),
                      ("response", "Disguise"), ("response", "Disguise other side")):
    got = get(f"/flows/{flow['id']}/{message}/content/{urllib.parse.quote(view)}.json")
    if "lines" in got:  # mitmproxy 11
        text = "\n".join("".join(t for _, t in line) for line in got["lines"])
    else:  # mitmproxy 12
        text = got["text"]
    print(f"\n== {message}, view {view!r}:\n{text}")
PY
