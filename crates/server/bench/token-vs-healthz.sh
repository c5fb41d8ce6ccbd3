#!/usr/bin/env bash
# Token endpoint throughput as a fraction of the same server's /healthz throughput,
# measured in one run with the same load tool (wrk) and settings, keep-alive on.
#
#   crates/server/bench/token-vs-healthz.sh [DURATION_SECS] [CONNECTIONS] [WRK_THREADS]
#
# Needs a release build (cargo build --release) and wrk (apt-get install -y wrk).
# The client secret is server-generated (peppered HMAC, verified inline by the core).
# Load goes to 127.0.0.1 only and lasts DURATION_SECS per endpoint.
set -euo pipefail
cd "$(dirname "$0")/../../.."
dur=${1:-10}
conns=${2:-32}
threads=${3:-1}
bin=${PORTCULLIS_BIN:-${CARGO_TARGET_DIR:-target}/release/portcullis}
port=${PORT:-18089}
dir=$(mktemp -d)
trap 'kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT

secret=$("$bin" client add bench --data-dir "$dir" --scope read 2>/dev/null)
"$bin" serve --data-dir "$dir" --http "127.0.0.1:$port" 2>"$dir/server.log" &
pid=$!
for _ in $(seq 1 100); do
  if curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then break; fi
  sleep 0.1
done
export AUTH
AUTH=$(printf 'bench:%s' "$secret" | base64 -w0)
# One request first: the answer must be a token, or the benchmark measures errors.
curl -fsS -u "bench:$secret" -d grant_type=client_credentials \
  "http://127.0.0.1:$port/oauth2/token" | grep -q access_token

run() { wrk -t"$threads" -c"$conns" -d"${dur}s" --latency "$@"; }
echo "== GET /healthz"
healthz=$(run "http://127.0.0.1:$port/healthz")
echo "$healthz"
echo "== POST /oauth2/token (client_credentials, client_secret_basic)"
token=$(run -s crates/server/bench/token.lua "http://127.0.0.1:$port/oauth2/token")
echo "$token"
rps() { awk '/^Requests\/sec/ {print $2}'; }
h=$(echo "$healthz" | rps)
t=$(echo "$token" | rps)
echo "== token endpoint answers by status, OAuth errors (server's /metrics)"
curl -fsS "http://127.0.0.1:$port/metrics" |
  grep -E '^(http_requests_total\{route="/oauth2/token"|oauth_errors_total|store_errors_total)' || true
echo "== summary"
awk -v h="$h" -v t="$t" 'BEGIN { printf "healthz %.0f req/s, token %.0f req/s, ratio %.1f%%\n", h, t, 100 * t / h }'
