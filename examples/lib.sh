# Shared by the walkthroughs (sourced, not run): start and stop the pieces, and clean up.
# Override anything from the environment: PYTHON, MITMDUMP, MITMWEB, DISGUISE,
# PROVIDER_PORT, PROXY_PORT, WEB_PORT, WORK (where logs, flows and the mitmproxy CA go).
#
# Without WORK, a temporary folder is made and removed when the script ends — also when
# a step fails or the script is interrupted: it holds flows with originals, the API
# key and a mitmproxy CA key. (On a failure its logs are printed first.) A WORK you
# name is yours and is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
BIN=$(dirname "$PYTHON")
MITMDUMP=${MITMDUMP:-$BIN/mitmdump}
MITMWEB=${MITMWEB:-$BIN/mitmweb}
DISGUISE=${DISGUISE:-$BIN/disguise}
PROVIDER_PORT=${PROVIDER_PORT:-9000}
PROXY_PORT=${PROXY_PORT:-8080}
WEB_PORT=${WEB_PORT:-8081}
OWN_WORK=0
if [ -z "${WORK:-}" ]; then
  WORK=$(mktemp -d)
  OWN_WORK=1
fi
mkdir -p "$WORK"
unset http_proxy https_proxy all_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY NO_PROXY no_proxy

# The mappings: the example literals, on top of the shipped defaults (secrets, e-mails),
# which the addon and the disguise command always load unless told not to.
MAPPINGS=examples/literals.yaml

PIDS=()
cleanup() {  # [exit status]: the script's own when called as the EXIT trap
  local rc=${1:-$?}
  # The folder holds originals, the API key and a CA key: an interrupt must not cut its
  # removal short. Ignored from here on, not reset (with the default action, Ctrl-C
  # during the wait below ended the shell there); and the signal traps call cleanup
  # itself rather than `exit`: an interrupt that came as the script ended runs its trap
  # inside this EXIT trap, where `exit` would end the shell at once (seen once in CI).
  trap '' INT TERM
  trap - EXIT
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$OWN_WORK" = 1 ]; then
    if [ "$rc" != 0 ]; then
      for f in "$WORK"/*.log; do
        [ -f "$f" ] && { echo "--- $f (last lines)" >&2; tail -n 40 "$f" >&2; }
      done
    fi
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'cleanup 130' INT
trap 'cleanup 143' TERM

wait_port() {  # wait until something listens on 127.0.0.1:$1 (and process $2, if given, still runs)
  "$PYTHON" - "$1" "${2:-}" <<'PY'
import os, socket, sys, time
port, pid = int(sys.argv[1]), sys.argv[2]
deadline = time.time() + 120  # a loaded machine takes its time to start mitmproxy
while time.time() < deadline:
    try:
        socket.create_connection(("127.0.0.1", port), 0.5).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
    if pid:
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            sys.exit(f"process {pid} ended before it listened on port {port}")
sys.exit(f"nothing listens on port {port}")
PY
}

port_free() {  # port_free PORT NAME: stop with one line naming NAME when 127.0.0.1:PORT is taken
  "$PYTHON" - "$1" <<'PY' && return 0
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind: only a listener is in the way
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
PY
  echo "$(basename "$0"): port $1 is in use: set $2 to a free port, e.g. $2=$(( $1 + 100 )) bash $0" >&2
  exit 1
}

start_provider() {  # the stand-in LLM provider (examples/echo_provider.py)
  port_free "$PROVIDER_PORT" PROVIDER_PORT
  "$PYTHON" examples/echo_provider.py --port "$PROVIDER_PORT" "$@" 2>>"$WORK/provider.log" &
  PROVIDER_PID=$!
  PIDS+=("$PROVIDER_PID")
  wait_port "$PROVIDER_PORT" "$PROVIDER_PID"
}

start_mitmdump() {  # mitmdump with the addon; extra arguments go to mitmdump
  port_free "$PROXY_PORT" PROXY_PORT
  "$MITMDUMP" --listen-host 127.0.0.1 --listen-port "$PROXY_PORT" --set confdir="$WORK/conf" \
    -s addon/disguise.py --set disguise_mappings="$MAPPINGS" "$@" >>"$WORK/mitmdump.log" 2>&1 &
  MITM_PID=$!
  PIDS+=("$MITM_PID")
  wait_port "$PROXY_PORT" "$MITM_PID"
}

stop() {  # stop a process and wait for it (mitmdump -w writes its file on exit)
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

show() { echo; echo "== $*"; }
