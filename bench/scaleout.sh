#!/usr/bin/env bash
# Starts PostgreSQL (Debian's package, initdb into a temporary directory, a free loopback port,
# fsync and synchronous_commit on, as users run it; SCALEOUT_FSYNC=off turns both off) and
# versitygw (built once by .ci/versitygw; with --keep-alive, as docs/scaling.md runs it, and
# --quiet: SCALEOUT_VGW_FLAGS replaces those flags, "" gives versitygw's defaults, which close
# every connection after one request and log each request) with a bucket, runs bench/scaleout
# against them (it reports the CPU per request of the nodes, versitygw, PostgreSQL and itself), and
# pgbench -N (TPC-B without the branch and teller updates: 3 updates, an insert and a select a
# transaction, scale 10) for 15 s at the same client count on the same PostgreSQL, the ceiling the
# API's PostgreSQL rows are compared with (with pgbench's own client CPU per transaction), and stops both.
# pgbench runs twice, right before bench/scaleout and right after it, each after a CHECKPOINT
# (and bench/scaleout after a VACUUM ANALYZE of what the first pgbench left), and
# every PostgreSQL row is given as a share of both and of their mean: on a shared machine the same
# pgbench moved from 5,484 to 8,962 tps within three minutes (docs/benchmarks.md, run S), so one
# pgbench on one side of the run says more about the machine's drift than about convsvc. Arguments go to bench/scaleout
# (-clients, -duration, -only, ...). Run from the module root as root or as a user that may run
# postgres:
#
#   bench/scaleout.sh [-clients 32] [-duration 10s] [-conversions 48] [-size 512] [-only bbolt,pg-local,pg-s3,pg-s3-3] [-bin BIN] [-versus BIN] [-client lean|nethttp] [-distinct]
#
# -versus BIN runs each contender again with another convsvc binary (main's, say) on the same
# PostgreSQL, so a change and its base are compared in one run, between the same two pgbench runs.
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
  -c fsync="${SCALEOUT_FSYNC:-on}" -c synchronous_commit="${SCALEOUT_FSYNC:-on}" -c max_connections=300 >"$work/pg.log" 2>&1 &
pg_pid=$!
for _ in $(seq 1 600); do "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$pg_port" && break; sleep 0.1; done

# versitygw and a bucket
gw=$(.ci/versitygw)
gw_port=$(free_port)
mkdir -p "$work/gw/root" "$work/gw/versions"
export AWS_ACCESS_KEY_ID=scaleoutadmin AWS_SECRET_ACCESS_KEY=scaleoutsecret123
ROOT_ACCESS_KEY=$AWS_ACCESS_KEY_ID ROOT_SECRET_KEY=$AWS_SECRET_ACCESS_KEY \
  "$gw" ${SCALEOUT_VGW_FLAGS---keep-alive --quiet} --port "127.0.0.1:$gw_port" posix --versioning-dir "$work/gw/versions" "$work/gw/root" >"$work/gw.log" 2>&1 &
gw_pid=$!
for _ in $(seq 1 600); do curl -s -o /dev/null "http://127.0.0.1:$gw_port" && break; sleep 0.1; done
curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
  -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -X PUT "http://127.0.0.1:$gw_port/scaleout" >/dev/null

clients=32 prev=
for a in "$@"; do
  case "$a" in -clients=*) clients=${a#-clients=} ;; esac
  [ "$prev" = -clients ] && clients=$a
  prev=$a
done
run_pg "$PGBIN/psql" -q -h 127.0.0.1 -p "$pg_port" -U postgres -c "CREATE DATABASE pgbench" postgres
run_pg "$PGBIN/pgbench" -q -i -s 10 -h 127.0.0.1 -p "$pg_port" -U postgres pgbench >/dev/null 2>&1
# pgbench_run LABEL: one pgbench -N of 15 s after a CHECKPOINT; prints its tps and latency and
# leaves the tps in $work/tps.LABEL.
pgbench_run() {
  run_pg "$PGBIN/psql" -q -h 127.0.0.1 -p "$pg_port" -U postgres -c CHECKPOINT postgres
  echo
  echo "pgbench -N -c $clients -j 2 -T 15, $1 (fsync ${SCALEOUT_FSYNC:-on}, load $(cut -d' ' -f1 /proc/loadavg) before):"
  run_pg /usr/bin/time -f '%U %S' -o "$work/pg/pgbench.time" "$PGBIN/pgbench" -N -c "$clients" -j 2 -T 15 -h 127.0.0.1 -p "$pg_port" -U postgres pgbench 2>/dev/null >"$work/pgbench.out"
  grep -E '^(latency average|tps)' "$work/pgbench.out"
  sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/pgbench.out" >"$work/tps.$1"
  txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/pgbench.out")
  awk -v n="$txns" '{ if (n > 0) printf "pgbench client CPU ms per transaction: %.3f (%.2f s user, %.2f s system)\n", 1000*($1+$2)/n, $1, $2 }' "$work/pg/pgbench.time"
  echo "load after: $(cut -d' ' -f1 /proc/loadavg)"
}
# vacuum_all: VACUUM ANALYZE in every database, so that what one measurement left behind
# (pgbench's 100,000 updated rows) is cleaned up before the next one starts, not by an
# autovacuum worker in the middle of it: after pgbench ran, autovacuum's VACUUM ANALYZE of
# pgbench_accounts took about 10 s of one core, 60-80 s later, in convsvc's create or start
# phase (docs/benchmarks.md, run U). bench/scaleout drops each contender's database when its
# nodes stop, for the same reason.
vacuum_all() {
  for db in $(run_pg "$PGBIN/psql" -Atq -h 127.0.0.1 -p "$pg_port" -U postgres \
    -c "SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate" postgres); do
    run_pg "$PGBIN/psql" -q -h 127.0.0.1 -p "$pg_port" -U postgres -c "VACUUM ANALYZE" "$db"
  done
}
go build -o "$work/scaleout" ./bench/scaleout
pgbench_run before
vacuum_all
echo
run_pg "$PGBIN/psql" -q -h 127.0.0.1 -p "$pg_port" -U postgres -c CHECKPOINT postgres
"$work/scaleout" -postgres "postgres://postgres@127.0.0.1:$pg_port/postgres?sslmode=disable" \
  -s3-endpoint "http://127.0.0.1:$gw_port" -bucket scaleout -pg-pid "$(head -1 "$work/pg/data/postmaster.pid")" -s3-pid "$gw_pid" "$@" | tee "$work/scaleout.out"
pgbench_run after
echo
awk -F'|' -v a="$(cat "$work/tps.before")" -v b="$(cat "$work/tps.after")" '
  BEGIN { printf "Of pgbench -N (before %s, after %s, mean %.0f tps):\n", a, b, (a+b)/2 }
  $2 ~ /PostgreSQL/ && $3+0 > 0 {
    name = $2; gsub(/^ +| +$/, "", name)
    printf "  %s: %.3f of the mean (%.3f of before, %.3f of after), p99 %.1f ms\n", name, $3/((a+b)/2), $3/a, $3/b, $5
  }' "$work/scaleout.out"
