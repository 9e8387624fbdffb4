#!/usr/bin/env bash
# Profiles the PostgreSQL side of bench/scaleout: starts PostgreSQL (Debian's package, initdb in
# a temporary directory, a free loopback port, fsync on) with pg_stat_statements (track = all,
# so the statements inside the transition functions and triggers are counted too), runs
# bench/scaleout's PostgreSQL + local blobs row once with BIN, and prints the statements by
# their total time: calls, total ms, wall time per call in us (lock waits and CPU queueing
# included: compare proportions, not absolutes) and rows. Run from the module root as root or
# as a user that may run postgres; the environment goes to the node (CONVSVC_CACHE_MAX_BYTES=0
# turns the cache off):
#
#   bench/pgprofile.sh BIN [bench/scaleout flags, e.g. -clients 32 -duration 10s]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?usage: bench/pgprofile.sh BIN [scaleout flags]}; shift
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
run_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
work=$(mktemp -d /tmp/convsvc-pgprofile.XXXXXX); chmod 755 "$work"
cleanup() { run_pg "$PGBIN/pg_ctl" -D "$work/pg/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
mkdir "$work/pg"; [ "$(id -u)" = 0 ] && chown postgres:postgres "$work/pg"
run_pg "$PGBIN/initdb" -D "$work/pg/data" -U postgres -A trust -E UTF8 --no-sync >/dev/null
port=$(free_port)
run_pg "$PGBIN/postgres" -D "$work/pg/data" -p "$port" -k "$work/pg" -c listen_addresses=127.0.0.1 -c max_connections=300 \
  -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all >"$work/pg.log" 2>&1 &
for _ in $(seq 1 600); do "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$port" && break; sleep 0.1; done
psql() { run_pg "$PGBIN/psql" -q -h 127.0.0.1 -p "$port" -U postgres "$@"; }
psql -c "CREATE EXTENSION pg_stat_statements" postgres
# bench/scaleout wants an S3 endpoint and bucket even for the PostgreSQL + local blobs row alone.
AWS_ACCESS_KEY_ID=unused AWS_SECRET_ACCESS_KEY=unused go run ./bench/scaleout \
  -postgres "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable" -s3-endpoint http://127.0.0.1:1 -bucket unused \
  -pg-pid "$(head -1 "$work/pg/data/postmaster.pid")" -only pg-local -conversions 4 -bin "$bin" "$@"
echo
echo "pg_stat_statements, by total time (wall us per call):"
psql -c "SELECT calls, round(total_exec_time::numeric) AS total_ms, round((total_exec_time / calls * 1000)::numeric) AS us,
  rows, left(regexp_replace(query, '\s+', ' ', 'g'), 140) AS query
  FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 40" postgres
