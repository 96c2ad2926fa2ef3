#!/usr/bin/env bash
# Walkthrough 3: regular proxy mode, the client trusting the mitmproxy CA.
#
# Without a base URL to change, run mitmdump as an ordinary HTTPS proxy and let the
# client trust mitmproxy's CA (created in the confdir, ~/.mitmproxy by default):
#
#   mitmdump -s addon/disguise.py
#   HTTPS_PROXY=http://127.0.0.1:8080 SSL_CERT_FILE=~/.mitmproxy/mitmproxy-ca-cert.pem your-client
#
# (Node clients such as Claude Code: NODE_EXTRA_CA_CERTS=~/.mitmproxy/mitmproxy-ca-cert.pem.)
# Here the "provider" is the echo provider over https with a self-signed certificate,
# which mitmdump is told to trust; a real provider's certificate is trusted as is.
source "$(dirname "$0")/lib.sh"

start_provider --tls "$WORK/tls"
start_mitmdump --set ssl_verify_upstream_trusted_ca="$WORK/tls/cert.pem"

export HTTPS_PROXY=http://127.0.0.1:$PROXY_PORT
export SSL_CERT_FILE=$WORK/conf/mitmproxy-ca-cert.pem
export ANTHROPIC_BASE_URL=https://localhost:$PROVIDER_PORT   # for real: leave unset (api.anthropic.com)
export ANTHROPIC_API_KEY=${ANTHROPIC_API_KEY:-sk-ant-walkthrough-not-a-real-key}
PROMPT="Acme Corp: the key sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAA must never leave this laptop."

show "the client asks, through the proxy: $PROMPT"
"$PYTHON" examples/clients/ask_anthropic.py "$PROMPT"

show "what the provider received (masked):"
grep "provider received" "$WORK/provider.log"
show "mitmdump's line for the flow:"
grep "disguise: anthropic.messages" "$WORK/mitmdump.log"
