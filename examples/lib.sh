# Shared by the walkthroughs (sourced, not run): start and stop the pieces, and clean up.
# Override anything from the environment: PYTHON, MITMDUMP, MITMWEB, PROVIDER_PORT,
# PROXY_PORT, WEB_PORT, WORK (where logs, flows and the mitmproxy CA go).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
BIN=$(dirname "$PYTHON")
MITMDUMP=${MITMDUMP:-$BIN/mitmdump}
MITMWEB=${MITMWEB:-$BIN/mitmweb}
PROVIDER_PORT=${PROVIDER_PORT:-9000}
PROXY_PORT=${PROXY_PORT:-8080}
WEB_PORT=${WEB_PORT:-8081}
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"
export PYTHONPATH=addon  # so that `python -m disguiselib` works from a checkout
unset http_proxy https_proxy all_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY NO_PROXY no_proxy

# The mappings: the shipped defaults (secrets, e-mails) plus the example literals,
# merged from one folder in file-name order.
mkdir -p "$WORK/mappings"
cp mappings/default.yaml examples/literals.yaml "$WORK/mappings/"
MAPPINGS=$WORK/mappings

PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

wait_port() {  # wait until something listens on 127.0.0.1:$1
  "$PYTHON" - "$1" <<'PY'
import socket, sys, time
deadline = time.time() + 30
while time.time() < deadline:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.5).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(f"nothing listens on port {sys.argv[1]}")
PY
}

start_provider() {  # the stand-in LLM provider (examples/echo_provider.py)
  "$PYTHON" examples/echo_provider.py --port "$PROVIDER_PORT" "$@" 2>>"$WORK/provider.log" &
  PROVIDER_PID=$!
  PIDS+=("$PROVIDER_PID")
  wait_port "$PROVIDER_PORT"
}

start_mitmdump() {  # mitmdump with the addon; extra arguments go to mitmdump
  "$MITMDUMP" --listen-host 127.0.0.1 --listen-port "$PROXY_PORT" --set confdir="$WORK/conf" \
    -s addon/disguise.py --set disguise_mappings="$MAPPINGS" "$@" >>"$WORK/mitmdump.log" 2>&1 &
  MITM_PID=$!
  PIDS+=("$MITM_PID")
  wait_port "$PROXY_PORT"
}

stop() {  # stop a process and wait for it (mitmdump -w writes its file on exit)
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

show() { echo; echo "== $*"; }
