#!/usr/bin/env bash
# Load benchmark of converge-hub on PostgreSQL beside SQLite: the same N simulated devices
# (converge-hub-load: a thread and a kept-alive connection each, four per account, closed
# loop) against
#   sqlite        one hub on SQLite (--data);
#   postgresql-1  one hub on PostgreSQL (--database);
#   postgresql-2  two hubs on the same PostgreSQL database, device i talking to hub i mod 2
#                 (so every account is served by both at once);
#   postgresql-2-affinity  the same two hubs, every device of account a talking to hub
#                 a mod 2 (as nginx's `hash $http_authorization consistent` would route);
# polling with nothing new, then pushing one key per exchange. The runs alternate, REPEATS
# times each, and the summary takes each one's median run.
#
# Installs PostgreSQL from Debian if missing and starts a throwaway cluster (initdb in a
# temporary folder, Unix socket only, default durability: synchronous_commit=on, fsync=on;
# as the postgres user when run as root). Everything shares this machine's cores.
#
#   bash Benchmarks/hub-load-postgresql.sh     # DEVICES=32 SECONDS_PER_RUN=5 REPEATS=3 by default
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
devices=${DEVICES:-32}
seconds=${SECONDS_PER_RUN:-5}
repeats=${REPEATS:-3}

apt_install() { if [ "$(id -u)" = 0 ]; then apt-get "$@"; else sudo apt-get "$@"; fi; }
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || [ ! -f /usr/include/postgresql/libpq-fe.h ]; then
  apt_install install -y postgresql libpq-dev || { apt_install update && apt_install install -y postgresql libpq-dev; }
fi
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)

swift build -c release --product converge-hub >/dev/null
swift build -c release --product converge-hub-load >/dev/null
bin=$(swift build -c release --show-bin-path)

work=$(mktemp -d)
chmod 755 "$work"
pgdir="$work/pg"
mkdir "$pgdir"
pids=()
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  as_postgres "$pgbin/pg_ctl" -D "$pgdir/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
[ "$(id -u)" = 0 ] && chown postgres "$pgdir"
port=$((20000 + RANDOM % 30000))
as_postgres "$pgbin/initdb" -D "$pgdir/data" --auth=trust -U postgres -E UTF8 >/dev/null
as_postgres "$pgbin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w \
  -o "-k $pgdir -c listen_addresses='' -p $port -c max_connections=100" start >/dev/null
"$pgbin/psql" -X -q -h "$pgdir" -p "$port" -U postgres -c "CREATE DATABASE converge"
url="postgresql:///converge?host=$pgdir&port=$port&user=postgres"

start_hub() {  # start_hub NAME STORAGE-OPTIONS...: starts a hub and waits until it listens
  local name=$1
  shift
  "$bin/converge-hub" serve "$@" --listen 127.0.0.1:0 --max-connections 4096 >/dev/null 2>"$work/$name.log" &
  pids+=($!)
  for _ in $(seq 100); do grep -q "msg=listening" "$work/$name.log" 2>/dev/null && break; sleep 0.1; done
}
port_of() { grep -o 'msg=listening address=127.0.0.1:[0-9]*' "$work/$1.log" | cut -d: -f2; }
start_hub sqlite --data "$work/data"
start_hub pg-first --database "$url"
start_hub pg-second --database "$url"
sqlite_port=$(port_of sqlite)
pg_first=$(port_of pg-first)
pg_second=$(port_of pg-second)

load() { "$bin/converge-hub-load" --devices "$devices" --seconds "$seconds" "$@"; }
echo "== $devices devices, $seconds s per run, $repeats runs each, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$work/runs.jsonl"
for _ in $(seq "$repeats"); do
  for mode in poll push; do
    load --mode "$mode" --label sqlite --port "$sqlite_port" --data "$work/data" | tee -a "$work/runs.jsonl"
    load --mode "$mode" --label postgresql-1 --port "$pg_first" --database "$url" | tee -a "$work/runs.jsonl"
    load --mode "$mode" --label postgresql-2 --port "$pg_first,$pg_second" --database "$url" | tee -a "$work/runs.jsonl"
    load --mode "$mode" --label postgresql-2-affinity --port "$pg_first,$pg_second" --account-affinity --database "$url" \
      | tee -a "$work/runs.jsonl"
  done
done
python3 - "$work/runs.jsonl" <<'PY'
import json, sys
runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
def median(label, mode):
    chosen = sorted((r for r in runs if r["label"] == label and r["mode"] == mode), key=lambda r: r["syncs_per_second"])
    return chosen[len(chosen) // 2]
print("== summary (median runs; ratio: against the SQLite hub of the same mode)")
for name, mode in (("poll (nothing new)", "poll"), ("push (one key)", "push")):
    base = median("sqlite", mode)
    for label in ("sqlite", "postgresql-1", "postgresql-2", "postgresql-2-affinity"):
        run = median(label, mode)
        print(f"{name:20} {label:22} {run['syncs_per_second']:>8.0f} syncs/s  p50 {run['p50_ms']:7.3f} ms  p99 {run['p99_ms']:7.3f} ms"
              f"  failures {run['failures']}  ratio {run['syncs_per_second'] / base['syncs_per_second']:.2f}")
PY
