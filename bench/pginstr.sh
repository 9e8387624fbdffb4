#!/usr/bin/env bash
# Counts the instructions PostgreSQL spends on a create plus a start that queues (cache off),
# exactly and without the machine's load: valgrind (cachegrind, no cache simulation) runs a
# single-user PostgreSQL that executes, per job, what pgstore's callOnce sends without a write
# gate: BEGIN, convsvc_create_job, COMMIT, convsvc_send_notifies(), then the same for
# convsvc_start_job. That is the batch of schemas 20-27; since 0028 pgstore sends the call and
# convsvc_take_notifies() without BEGIN and COMMIT and its notifier sends many calls' payloads
# at once (docs/decisions.md): the script keeps the old batch so that schemas compare alone.
# The database: pgstore/migrations/0001 ... UPTO applied in order (each file in one
# transaction), 61 accounts, 30,000 jobs (10% queued, the rest succeeded), 1,000 events
# per account; then each VARIANT.sql given (none: the migrations as they are). Prints
# instructions per create+start: (Ir(300 jobs) - Ir(60 jobs)) / 240, so start-up and the first
# calls' compilation drop out; repeated runs agree to 0.03%. The single-user backend prints
# every row it returns, a constant part of each figure. Run from the module root as root or as
# a user that may run postgres:
#
#   bench/pginstr.sh UPTO [VARIANT.sql ...]      e.g. bench/pginstr.sh 26; bench/pginstr.sh 27
set -euo pipefail
cd "$(dirname "$0")/.."
upto=$1; shift
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
run_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
work=$(mktemp -d /tmp/convsvc-pginstr.XXXXXX); chmod 755 "$work"
mkdir "$work/pg"; [ "$(id -u)" = 0 ] && chown postgres:postgres "$work/pg" "$work"
trap 'run_pg "$PGBIN/pg_ctl" -D "$work/pg/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
run_pg "$PGBIN/initdb" -D "$work/pg/data" -U postgres -A trust -E UTF8 --no-sync >/dev/null
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
run_pg "$PGBIN/pg_ctl" -D "$work/pg/data" -o "-p $port -k $work/pg -c listen_addresses=127.0.0.1" -l "$work/pg.log" -w start >/dev/null
psql() { "$PGBIN/psql" -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres "$@"; }
psql -c "CREATE DATABASE base" postgres
for f in pgstore/migrations/*.sql; do
  v=$(basename "$f"); v=$((10#${v%%_*}))
  [ "$v" -le "$upto" ] && psql -1 -f "$f" base
done
for f in "$@"; do psql -1 -f "$f" base; done
psql base <<'EOF'
INSERT INTO accounts (id, name, spend_cap_cents, created_at)
  SELECT 'acct_' || i, 'a' || i, 1000000000, now() FROM generate_series(1, 61) i;
INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, options, created_at, expires_at,
    started_at, finished_at, output_bytes, output_sha256, upload_size, upload_etag, error_code)
  SELECT 'job_' || lpad(to_hex(i), 8, '0') || substr(md5(i::text), 1, 16), 'acct_' || (1 + i % 61),
    CASE WHEN i % 10 = 0 THEN 'queued' ELSE 'succeeded' END, 'png', 'jpeg', 1000, '{"quality":80}'::bytea,
    now() - interval '1 hour' + i * interval '100 ms', now() + interval '7 days' - interval '1 hour' + i * interval '100 ms',
    now() - interval '1 hour' + i * interval '100 ms',
    CASE WHEN i % 10 = 0 THEN NULL ELSE now() END, CASE WHEN i % 10 = 0 THEN NULL ELSE 5000 END,
    CASE WHEN i % 10 = 0 THEN NULL ELSE md5(i::text) END, 1000, md5(i::text), ''
  FROM generate_series(1, 30000) i;
INSERT INTO events (account_id, seq, id, type, job_id, created_at, snap)
  SELECT e.account_id, e.seq + s, 'evt_x_' || e.account_id || '_' || s, 'job.queued', 'x', now(), (SELECT to_jsonb(j) FROM jobs j LIMIT 1)
  FROM event_seqs e, generate_series(1, 1000) s;
UPDATE event_seqs SET seq = seq + 1000;
VACUUM ANALYZE;
EOF
for n in 60 300; do psql -c "CREATE DATABASE r$n TEMPLATE base" postgres; done
psql -c CHECKPOINT postgres
run_pg "$PGBIN/pg_ctl" -D "$work/pg/data" -m fast -w stop >/dev/null
declare -A ir
for n in 60 300; do
  for ((i = 0; i < n; i++)); do
    a="acct_$((1 + i % 61))"; j=$(printf 'job_zz%06dxxxxxxxxxxxxxx' "$i")
    echo "BEGIN;"
    echo "SELECT * FROM convsvc_create_job('$j', '$a', 'created', 'png', 'jpeg', 1000, '{\"quality\":80}'::bytea, 86400000000, '', NULL, '', '', '', 1, true);"
    echo "COMMIT;"; echo "SELECT convsvc_send_notifies();"
    echo "BEGIN;"
    echo "SELECT * FROM convsvc_start_job('$a', '$j', 1000, 1000, 'etag', NULL, '', 1, true);"
    echo "COMMIT;"; echo "SELECT convsvc_send_notifies();"
  done > "$work/in$n.sql"
  run_pg valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    "$PGBIN/postgres" --single -D "$work/pg/data" -c synchronous_commit=off "r$n" < "$work/in$n.sql" >/dev/null 2>"$work/err$n"
  if grep -q ERROR "$work/err$n"; then grep -m3 ERROR "$work/err$n" >&2; exit 1; fi
  ir[$n]=$(awk '/I *refs/ {gsub(",", "", $4); print $4}' "$work/err$n")
done
echo "schema $upto${*:+ + $*}: $(( (ir[300] - ir[60]) / 240 )) instructions per create+start (Ir 60 jobs ${ir[60]}, 300 jobs ${ir[300]})"
