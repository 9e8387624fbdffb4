#!/usr/bin/env bash
# Starts PostgreSQL (Debian's package, initdb into a temporary directory, a free loopback port,
# fsync off) and versitygw (built once by .ci/versitygw) with a bucket, runs bench/scaleout
# against them, and stops both. Arguments go to bench/scaleout (-clients, -duration, ...).
# Run from the module root as root or as a user that may run postgres:
#
#   bench/scaleout.sh [-clients 32] [-duration 10s] [-conversions 48] [-size 512]
set -euo pipefail
cd "$(dirname "$0")/.."
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
work=$(mktemp -d /tmp/convsvc-scaleout.XXXXXX); chmod 755 "$work"
pg_pid= ; gw_pid=
cleanup() {
  [ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null || true
  [ -n "$pg_pid" ] && run_pg "$PGBIN/pg_ctl" -D "$work/pg/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# PostgreSQL
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
run_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
mkdir "$work/pg"; [ "$(id -u)" = 0 ] && chown postgres:postgres "$work/pg"
run_pg "$PGBIN/initdb" -D "$work/pg/data" -U postgres -A trust -E UTF8 --no-sync >/dev/null
pg_port=$(free_port)
run_pg "$PGBIN/postgres" -D "$work/pg/data" -p "$pg_port" -k "$work/pg" -c listen_addresses=127.0.0.1 \
  -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 >"$work/pg.log" 2>&1 &
pg_pid=$!
for _ in $(seq 1 600); do "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$pg_port" && break; sleep 0.1; done

# versitygw and a bucket
gw=$(.ci/versitygw)
gw_port=$(free_port)
mkdir -p "$work/gw/root" "$work/gw/versions"
export AWS_ACCESS_KEY_ID=scaleoutadmin AWS_SECRET_ACCESS_KEY=scaleoutsecret123
ROOT_ACCESS_KEY=$AWS_ACCESS_KEY_ID ROOT_SECRET_KEY=$AWS_SECRET_ACCESS_KEY \
  "$gw" --port "127.0.0.1:$gw_port" posix --versioning-dir "$work/gw/versions" "$work/gw/root" >"$work/gw.log" 2>&1 &
gw_pid=$!
for _ in $(seq 1 600); do curl -s -o /dev/null "http://127.0.0.1:$gw_port" && break; sleep 0.1; done
curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
  -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -X PUT "http://127.0.0.1:$gw_port/scaleout" >/dev/null

go run ./bench/scaleout -postgres "postgres://postgres@127.0.0.1:$pg_port/postgres?sslmode=disable" \
  -s3-endpoint "http://127.0.0.1:$gw_port" -bucket scaleout "$@"
