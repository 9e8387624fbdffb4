#!/usr/bin/env bash
# Micro-benchmarks of single PostgreSQL statements that every API write runs, on a scratch
# PostgreSQL (Debian's package, fsync on) with convsvc's schema (BIN serve migrates it, then
# stops). Run from the module root as root or as a user that may run postgres:
#
#   bench/pgmicro.sh BIN [rounds]
#
# 1. The write gate, one backend's CPU per call (from /proc/self/stat; a PL/pgSQL loop calling
#    it 60,000 times over 600 keys, a COMMIT after each, windows pre-filled with 120 entries
#    of the last 60 s): the schema's convsvc_write_gate, migration 0024's body beside it as
#    gate_0024 (taken from pgstore/migrations/0024_write_gate.sql), and the key check alone.
# 2. What a batch's extra statements cost (pgbench -M prepared, 16 clients, 5 s each, all
#    PostgreSQL and pgbench CPU on the machine): BEGIN; two one-row UPDATEs; COMMIT, the same
#    with a SAVEPOINT between the updates, and the same followed by an empty
#    SELECT convsvc_send_notifies().
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?usage: bench/pgmicro.sh BIN [rounds]}; rounds=${2:-3}
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
run_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
work=$(mktemp -d /tmp/convsvc-pgmicro.XXXXXX); chmod 755 "$work"
node=
cleanup() {
  [ -n "$node" ] && kill "$node" 2>/dev/null || true
  run_pg "$PGBIN/pg_ctl" -D "$work/pg/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/pg" "$work/data"; [ "$(id -u)" = 0 ] && chown postgres:postgres "$work/pg"
run_pg "$PGBIN/initdb" -D "$work/pg/data" -U postgres -A trust -E UTF8 --no-sync >/dev/null
port=$(free_port)
run_pg "$PGBIN/postgres" -D "$work/pg/data" -p "$port" -k "$work/pg" -c listen_addresses=127.0.0.1 -c max_connections=100 >"$work/pg.log" 2>&1 &
for _ in $(seq 1 600); do "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$port" && break; sleep 0.1; done
psql() { run_pg "$PGBIN/psql" -qAt -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres "$@"; }
psql -c "CREATE DATABASE convsvc" postgres
url="postgres://postgres@127.0.0.1:$port/convsvc?sslmode=disable"
CONVSVC_ADMIN_TOKEN=pgmicro-admin-token-0123456789abcdef "$bin" serve --data "$work/data" --database "$url" \
  --listen 127.0.0.1:0 --blob-listen 127.0.0.1:0 >"$work/serve.log" 2>&1 &
node=$!
for _ in $(seq 1 600); do grep -q "serving the API" "$work/serve.log" && break; sleep 0.1; done
kill "$node"; wait "$node" 2>/dev/null || true; node=

sed 's/convsvc_write_gate/gate_0024/' pgstore/migrations/0024_write_gate.sql >"$work/gate_0024.sql"
psql convsvc -f "$work/gate_0024.sql"
psql convsvc <<'SQL'
INSERT INTO accounts (id, name, spend_cap_cents, created_at) SELECT 'a' || i, 'n', 1000000, now() FROM generate_series(0, 60) i;
INSERT INTO api_keys (id, account_id, prefix, hash, created_at)
  SELECT 'k' || i, 'a' || (i % 61), 'p', decode(md5('k' || i), 'hex'), now() FROM generate_series(1, 600) i;
CREATE FUNCTION gate_key(p_hash bytea, p_key_id text, p_account text, p_presets_only boolean,
    p_limit integer, p_window_us bigint, OUT o_count integer, OUT o_oldest timestamptz, OUT o_now timestamptz)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM api_keys WHERE hash = p_hash AND id = p_key_id AND account_id = p_account
        AND presets_only = p_presets_only AND revoked_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'API key % is not live', p_key_id USING ERRCODE = 'CV401';
    END IF;
    o_count := 1; o_now := clock_timestamp(); o_oldest := o_now;
END $$;
CREATE FUNCTION cpu_ticks() RETURNS bigint LANGUAGE sql AS $$
  SELECT split_part(s, ' ', 14)::bigint + split_part(s, ' ', 15)::bigint FROM pg_read_file('/proc/self/stat') s $$;
DO $do$
DECLARE v text;
BEGIN
  FOREACH v IN ARRAY ARRAY['convsvc_write_gate', 'gate_0024', 'gate_key'] LOOP
    EXECUTE format($f$
      CREATE PROCEDURE %I(n int, INOUT cpu_us_per_call numeric DEFAULT 0) LANGUAGE plpgsql AS $p$
      DECLARE i int; c0 bigint := cpu_ticks(); k int;
      BEGIN
        FOR i IN 1..n LOOP
          k := (i %% 600) + 1;
          PERFORM %I(decode(md5('k' || k), 'hex'), 'k' || k, 'a' || (k %% 61), false, 1000000, 60000000);
          COMMIT;
        END LOOP;
        cpu_us_per_call := round((cpu_ticks() - c0) * 10000.0 / n, 1);
      END $p$ $f$, 'loop_' || v, v);
  END LOOP;
END $do$;
CREATE TABLE micro_a (id int PRIMARY KEY, n bigint, pad text);
INSERT INTO micro_a SELECT i, 0, repeat('x', 200) FROM generate_series(1, 10000) i;
CREATE TABLE micro_b (id int PRIMARY KEY, n bigint);
INSERT INTO micro_b SELECT i, 0 FROM generate_series(1, 10000) i;
SQL
cat >"$work/plain.pgb" <<'PGB'
\set k random(1, 10000)
BEGIN;
UPDATE micro_b SET n = n + 1 WHERE id = :k;
UPDATE micro_a SET n = n + 1 WHERE id = :k;
COMMIT;
PGB
sed 's/^UPDATE micro_a/SAVEPOINT g;\nUPDATE micro_a/' "$work/plain.pgb" >"$work/savepoint.pgb"
{ cat "$work/plain.pgb"; echo 'SELECT convsvc_send_notifies();'; } >"$work/send.pgb"
chmod 644 "$work"/*.pgb

echo "bench/pgmicro.sh, $(date -u +%FT%TZ), PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}'), load $(cut -d' ' -f1 /proc/loadavg)"
echo "1. write gate, one backend's CPU us per call (60,000 calls, windows of 120 entries):"
for r in $(seq 1 "$rounds"); do
  line="   round $r:"
  for v in gate_0024 convsvc_write_gate gate_key; do
    psql convsvc -c "TRUNCATE rate_windows" \
      -c "INSERT INTO rate_windows SELECT id, ARRAY(SELECT clock_timestamp() - (60 - k * 0.5) * interval '1 second' FROM generate_series(1, 120) k) FROM api_keys" \
      -c "VACUUM rate_windows" >/dev/null
    line="$line $v $(psql convsvc -c "CALL loop_$v(60000)")"
  done
  echo "$line (load $(cut -d' ' -f1 /proc/loadavg))"
done
echo "2. a batch's statements, pgbench -M prepared -c 16 -j 2 -T 5, tps:"
for r in $(seq 1 "$rounds"); do
  line="   round $r:"
  for f in plain savepoint send; do
    tps=$(run_pg "$PGBIN/pgbench" -n -M prepared -h 127.0.0.1 -p "$port" -U postgres -f "$work/$f.pgb" -T 5 -c 16 -j 2 convsvc 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
    line="$line $f $tps"
  done
  echo "$line (load $(cut -d' ' -f1 /proc/loadavg))"
done
