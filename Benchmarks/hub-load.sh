#!/usr/bin/env bash
# Load benchmark of converge-hub: N simulated devices (threads with kept-alive connections,
# each waiting for its answer before the next request) sync over loopback with one hub,
# first polling with nothing new, then pushing one key each time; the same requests then go
# to nginx answering a fixed body on the same machine, the ceiling of HTTP here.
# Prints one JSON line per run and a summary. Installs nginx from Debian if missing.
#
# The hub and nginx runs alternate, REPEATS times each, and the summary takes the median
# run of each (the machine may be busy with other work: compare runs made side by side).
#
#   bash Benchmarks/hub-load.sh            # DEVICES=32 SECONDS_PER_RUN=5 REPEATS=3 by default
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
devices=${DEVICES:-32}
seconds=${SECONDS_PER_RUN:-5}
repeats=${REPEATS:-3}

if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  apt_install() { if [ "$(id -u)" = 0 ]; then apt-get "$@"; else sudo apt-get "$@"; fi; }
  apt_install install -y nginx || { apt_install update && apt_install install -y nginx; }
fi
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)

swift build -c release --product converge-hub >/dev/null
swift build -c release --product converge-hub-load >/dev/null
bin=$(swift build -c release --show-bin-path)

work=$(mktemp -d)
cleanup() {
  [ -n "${hub_pid:-}" ] && kill "$hub_pid" 2>/dev/null || true
  [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$bin/converge-hub" serve --data "$work/data" --listen 127.0.0.1:0 --max-connections 4096 2>"$work/hub.log" &
hub_pid=$!
for _ in $(seq 100); do grep -q "msg=listening" "$work/hub.log" 2>/dev/null && break; sleep 0.1; done
hub_port=$(grep -o 'msg=listening address=127.0.0.1:[0-9]*' "$work/hub.log" | cut -d: -f2)

nginx_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/nginx/logs"
cat >"$work/nginx.conf" <<CONF
worker_processes auto;
pid $work/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 10000000;
    keepalive_timeout 60s;
    client_body_temp_path $work/nginx;
    server {
        listen 127.0.0.1:$nginx_port;
        location / {
            default_type application/octet-stream;
            return 200 "fixed-body!";
        }
    }
}
CONF
"$nginx_bin" -p "$work/nginx" -c "$work/nginx.conf"

run() { "$bin/converge-hub-load" --data "$work/data" --devices "$devices" --seconds "$seconds" "$@"; }
echo "== $devices devices, $seconds s per run, $repeats runs each, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$work/runs.jsonl"
for _ in $(seq "$repeats"); do
  for mode in poll push; do
    run --port "$hub_port" --mode "$mode" | tee -a "$work/runs.jsonl"
    run --port "$nginx_port" --mode "$mode" --fixed-responder | tee -a "$work/runs.jsonl"
  done
done

metrics=$(curl -s "http://127.0.0.1:$hub_port/metrics")
commits=$(echo "$metrics" | awk '/^converge_hub_commits_total /{print $2}')
commit_bytes=$(echo "$metrics" | awk '/^converge_hub_commit_bytes_total /{print $2}')
commit_seconds=$(echo "$metrics" | awk '/^converge_hub_commit_duration_seconds_sum /{print $2}')
python3 - "$work/runs.jsonl" "$commits" "$commit_bytes" "$commit_seconds" <<'PY'
import json, sys
runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
commits, commit_bytes, commit_seconds = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
def median(target, mode):
    chosen = sorted((r for r in runs if r["target"] == target and r["mode"] == mode), key=lambda r: r["syncs_per_second"])
    return chosen[len(chosen) // 2]
print("== summary (median runs)")
for name, mode in (("poll (nothing new)", "poll"), ("push (one key)", "push")):
    hub, ceiling = median("converge-hub", mode), median("fixed-responder", mode)
    print(f"{name:20} converge-hub {hub['syncs_per_second']:>8.0f}/s p50 {hub['p50_ms']:.3f} ms p99 {hub['p99_ms']:.3f} ms"
          f" | nginx fixed body {ceiling['syncs_per_second']:>8.0f}/s p50 {ceiling['p50_ms']:.3f} ms p99 {ceiling['p99_ms']:.3f} ms"
          f" | ratio {hub['syncs_per_second'] / ceiling['syncs_per_second']:.2f}")
if commits:
    print(f"commits: {commits}, mean {commit_bytes / commits:.0f} bytes, mean {1000 * commit_seconds / commits:.3f} ms each (waiting for the batch included)")
PY
