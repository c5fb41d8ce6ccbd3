#!/usr/bin/env bash
# Peak request rate of the lab vs wrk on the same trivial endpoint (GET /healthz), same
# server process, same connection count, one after the other in one run. Prints both rates
# and their ratio (the issue's target: lab >= 0.8 x wrk). Needs `wrk` and a release build:
#   cargo build --release && crates/lab/bench/wrk-compare.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../../.."
secs=${1:-10}
conns=64  # the healthz-peak scenario runs 64 keep-alive clients
bin=${PORTCULLIS_BIN:-${CARGO_TARGET_DIR:-target}/release/portcullis}
out=$(mktemp -d)
"$bin" lab healthz --listen 127.0.0.1:0 > "$out/url" &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 50); do [ -s "$out/url" ] && break; sleep 0.1; done
url=$(head -1 "$out/url")
echo "server: $url (pid $server)"
# Warm-up so neither tool pays for the server's first connections.
wrk -t2 -c"$conns" -d2s "$url/healthz" > /dev/null
wrk_rps=$(wrk -t2 -c"$conns" -d"${secs}s" "$url/healthz" | awk '/Requests\/sec/ {print $2}')
"$bin" lab run healthz-peak --target "$url" --duration "${secs}s" --out "$out/lab" --quiet > "$out/lab.txt"
lab_rps=$(python3 -c "import json,sys; d=json.load(open('$out/lab/summary.json')); g=d['sections'][0]['results'][0]['repeats'][0]['groups'][0]; print(round(g['completed']/d['sections'][0]['results'][0]['repeats'][0]['duration_s'],1))")
echo "wrk: $wrk_rps req/s   lab: $lab_rps req/s   ($conns connections, ${secs}s each)"
python3 -c "print('lab/wrk ratio: %.2f' % ($lab_rps / $wrk_rps))"
