#!/usr/bin/env bash
# Counts the instructions PostgreSQL's backend spends on a create plus a start that queues
# (cache off), as pgstore sends them since migration 0028 and without the machine's load:
# PostgreSQL runs under valgrind (cachegrind, no cache simulation, following its forked
# backends), and pgbench, in prepared mode with one connection, sends per job the two
# pipelined batches pgstore's callOnce sends: the write gate, convsvc_create_job and
# convsvc_take_notifies() with one Sync (one implicit transaction), then the same with
# convsvc_start_job; from schema 30, as pgstore sends them since 0030, the one statement
# convsvc_create_job_gated, then convsvc_start_job_gated. The notifier's shared sends, the WAL writer and the kernel are not
# counted. The database: pgstore/migrations/0001 ... UPTO applied in order (each file in one
# transaction), then each VARIANT.sql given (none: the migrations as they are), then 61
# accounts, 600 keys each with a rate window of 60 writes, 30,000 jobs (10% queued, the rest
# succeeded), 1,000 events per account (none pruned in the run), 3,000 cache entries (since
# 2026-12-05; no plain call reads them); then, from schema 29, each window remembers its key,
# as after its first gate. The pgbench runs use one random seed, so
# runs of one schema agree to 0.1%. Prints instructions per create+start (per claim+finish for
# the worker's calls below): (Ir(300 jobs) - Ir(60 jobs)) / 240 of the backend that served
# each run, so start-up and the first calls' compilation drop out. Run from the module root as root or as a user that may run postgres:
#
#   bench/pgcallinstr.sh UPTO [VARIANT.sql ...]      e.g. bench/pgcallinstr.sh 29; bench/pgcallinstr.sh 30
#   PGCALLINSTR_SCRIPT=calls.pgb bench/pgcallinstr.sh UPTO VARIANT.sql   (a variant's own pgbench script)
#   PGCALLINSTR_CALLS=checksum bench/pgcallinstr.sh UPTO   (from schema 30: the start passes the input's checksum, as the
#       local blob store's always does; with the cache off the job has no cache base)
#   PGCALLINSTR_CALLS=keyed bench/pgcallinstr.sh UPTO      (from schema 30: as checksum, and the create gives a cache base,
#       as with the cache on: the start looks up the key and finds no entry; the database holds 3,000 entries)
#   PGCALLINSTR_CALLS=hit bench/pgcallinstr.sh UPTO        (from schema 30: as keyed, and every start's key has an
#       entry: the start finishes the job from the cache)
#   PGCALLINSTR_CALLS=convert bench/pgcallinstr.sh UPTO    (from schema 30: a worker's calls instead, per conversion:
#       convsvc_claim_job from a random account's turn, then convsvc_finish_job of the job it took, succeeded, each
#       followed by convsvc_take_notifies() as a statement of its own; the accounts hold reservations for them)
#   PGCALLINSTR_CALLS=convert-keyed bench/pgcallinstr.sh UPTO   (as convert, with the cache on: every queued job has
#       a cache key that finds no entry, so the claim runs the key's flight and the finish stores the entry)
#
# bench/pginstr.sh counts a single-user backend instead (statements parsed and planned each
# time, no gate, the batch of schemas 20-27): use it to compare schemas up to 27.
set -euo pipefail
upto=${1:?usage: bench/pgcallinstr.sh UPTO [VARIANT.sql ...]}; shift
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
run_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
work=$(mktemp -d /tmp/convsvc-pgcallinstr.XXXXXX); chmod 755 "$work"
mkdir "$work/pg" "$work/cg"; [ "$(id -u)" = 0 ] && chown postgres:postgres "$work/pg" "$work/cg" "$work"
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
psql base <<'SQL'
INSERT INTO accounts (id, name, spend_cap_cents, created_at)
  SELECT 'acct_' || i, 'a' || i, 1000000000, now() FROM generate_series(1, 61) i;
INSERT INTO api_keys (id, account_id, prefix, hash, created_at, presets_only)
  SELECT 'key_' || i, 'acct_' || (1 + i % 61), 'p' || i, sha256(('k' || i)::bytea), now(), false FROM generate_series(0, 599) i;
INSERT INTO rate_windows (key_id, times)
  SELECT 'key_' || i, ARRAY(SELECT now() - interval '1 hour' + g * interval '1 second' FROM generate_series(1, 60) g ORDER BY 1)
  FROM generate_series(0, 599) i;
INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, options, created_at, expires_at,
    started_at, finished_at, output_bytes, output_sha256, upload_size, upload_etag, error_code)
  SELECT 'job_' || lpad(to_hex(i), 8, '0') || substr(md5(i::text), 1, 16), 'acct_' || (1 + i % 61),
    CASE WHEN i % 10 = 0 THEN 'queued' ELSE 'succeeded' END, 'png', 'jpeg', 1000, '{"quality":80}'::bytea,
    now() - interval '1 hour' + i * interval '100 ms', now() + interval '7 days' - interval '1 hour' + i * interval '100 ms',
    now() - interval '1 hour' + i * interval '100 ms',
    CASE WHEN i % 10 = 0 THEN NULL ELSE now() END, CASE WHEN i % 10 = 0 THEN NULL ELSE 5000 END,
    CASE WHEN i % 10 = 0 THEN NULL ELSE md5(i::text) END, 1000, md5(i::text), ''
  FROM generate_series(1, 30000) i;
DELETE FROM event_seqs;
INSERT INTO event_seqs (account_id, seq) SELECT id, 1000 FROM accounts;
SQL
# The log's 1,000 events an account: from schema 32 rows of event_log with the job as a row
# (the events view takes no inserts), before it JSON snapshots.
if [ "$upto" -ge 32 ]; then
  psql -c "DELETE FROM event_log; INSERT INTO event_log (account_id, seq, id, type, job_id, created_at, job)
    SELECT a.id, s, 'evt_x_' || a.id || '_' || s, 'job.queued', 'x', now(),
      (SELECT jsonb_populate_record(NULL::convsvc_event_job, to_jsonb(j)) FROM jobs j LIMIT 1)
    FROM accounts a, generate_series(1, 1000) s" base
else
  psql -c "DELETE FROM events; INSERT INTO events (account_id, seq, id, type, job_id, created_at, snap)
    SELECT a.id, s, 'evt_x_' || a.id || '_' || s, 'job.queued', 'x', now(), (SELECT to_jsonb(j) FROM jobs j LIMIT 1)
    FROM accounts a, generate_series(1, 1000) s" base
fi
# 3,000 cache entries (none any job's key), so a keyed start's lookup descends a real index.
[ "$upto" -ge 19 ] && psql -c "INSERT INTO cache_entries (key, object, output_bytes, output_sha256, output_attempt, output_verified, last_used)
  SELECT convsvc_cache_key('png>jpeg q80', md5(i::text || 'x')), 'job_x' || i, 5000, md5(i::text), 1, true, now()
  FROM generate_series(1, 3000) i" base
# A worker's calls: reservations for the queued jobs the claims take, and for convert-keyed
# each queued job's cache key (its own input's, so no key has an entry).
case "${PGCALLINSTR_CALLS:-plain}" in
  convert*) psql -c "UPDATE accounts SET reserved_cents = 100000" base ;;
esac
if [ "${PGCALLINSTR_CALLS:-plain}" = convert-keyed ]; then
  psql -c "UPDATE jobs SET cache_base = 'png>gif', input_sha256 = md5(id) WHERE status = 'queued'" base
fi
if [ "$upto" -ge 29 ]; then
  psql -c "UPDATE rate_windows r SET live_hash = k.hash, live_account = k.account_id, live_presets_only = k.presets_only
    FROM api_keys k WHERE k.id = r.key_id" base
fi
psql -c "VACUUM ANALYZE" base
for n in 60 300; do psql -c "CREATE DATABASE r$n TEMPLATE base" postgres; done
psql -c CHECKPOINT postgres
run_pg "$PGBIN/pg_ctl" -D "$work/pg/data" -m fast -w stop >/dev/null
cat > "$work/job.pgb" <<'PGB'
\set n random(1, 2000000000)
\set k random(0, 599)
\startpipeline
SELECT o_count FROM convsvc_write_gate(sha256(('k' || :k)::bytea), 'key_' || :k, 'acct_' || (1 + :k % 61), false, 1000000, 86400000000);
SELECT * FROM convsvc_create_job('job_q' || :n, 'acct_' || (1 + :k % 61), 'created', 'png', 'jpeg', 1000, '{"quality":80}'::bytea, 86400000000, '', NULL, '', '', '', 1, true);
SELECT convsvc_take_notifies();
\endpipeline
\startpipeline
SELECT o_count FROM convsvc_write_gate(sha256(('k' || :k)::bytea), 'key_' || :k, 'acct_' || (1 + :k % 61), false, 1000000, 86400000000);
SELECT * FROM convsvc_start_job('acct_' || (1 + :k % 61), 'job_q' || :n, 1000, 1000, 'etag', NULL, '', 1, true);
SELECT convsvc_take_notifies();
\endpipeline
PGB
if [ "$upto" -ge 30 ]; then
  # PGCALLINSTR_CALLS: the start's checksum (each job's own, so no key is ever cached; for
  # hit, the input of the first cache entry's key) and, for keyed and hit, the create's cache
  # base.
  start_sha="''" create_base= per=create+start
  case "${PGCALLINSTR_CALLS:-plain}" in
    plain) ;;
    checksum) start_sha='md5(:n::text)' ;;
    keyed) start_sha='md5(:n::text)' create_base='png>jpeg q80' ;;
    hit) start_sha="md5('1x')" create_base='png>jpeg q80' ;;
    convert | convert-keyed) per=claim+finish ;;
    *) echo "PGCALLINSTR_CALLS is plain, checksum, keyed, hit, convert or convert-keyed" >&2; exit 2 ;;
  esac
  if [ "$per" = create+start ]; then cat > "$work/job.pgb" <<PGB
\set n random(1, 2000000000)
\set k random(0, 599)
SELECT * FROM convsvc_create_job_gated(sha256(('k' || :k)::bytea), 'key_' || :k, 'acct_' || (1 + :k % 61), false, 1000000, 86400000000, 'job_q' || :n, 'acct_' || (1 + :k % 61), 'created', 'png', 'jpeg', 1000, '{"quality":80}'::bytea, 86400000000, '', NULL, '', '', '$create_base', 1, true);
SELECT * FROM convsvc_start_job_gated(sha256(('k' || :k)::bytea), 'key_' || :k, 'acct_' || (1 + :k % 61), false, 1000000, 86400000000, 'acct_' || (1 + :k % 61), 'job_q' || :n, 1000, 1000, 'etag', NULL, $start_sha, 1, true);
PGB
  else
  # A worker's claim and finish (pgstore's claimJobCall and finishJobCall), the take after each
  # sent on its own (pgstore pipelines it with the call in one implicit transaction).
  cat > "$work/job.pgb" <<'PGB'
\set a random(1, 61)
SELECT (c.o_job).id AS cid, (c.o_job).attempt AS catt FROM convsvc_claim_job('acct_' || :a, 'node1', 60000000, 1, false) c \gset
SELECT convsvc_take_notifies();
SELECT id FROM convsvc_finish_job(:cid, :catt, 'succeeded', '', '', '', 5000, md5(:cid), NULL, true, false, 1073741824);
SELECT convsvc_take_notifies();
PGB
  fi
fi
# PGCALLINSTR_SCRIPT=FILE: another pgbench script in place of these batches (a variant's own calls).
[ -n "${PGCALLINSTR_SCRIPT:-}" ] && cp "$PGCALLINSTR_SCRIPT" "$work/job.pgb"
run_pg valgrind --tool=cachegrind --cache-sim=no --trace-children=yes --cachegrind-out-file="$work/cg/cg.%p" \
  "$PGBIN/postgres" -D "$work/pg/data" -p "$port" -k "$work/pg" -c listen_addresses=127.0.0.1 -c autovacuum=off >"$work/pgv.log" 2>&1 &
for _ in $(seq 1 1200); do "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$port" && break; sleep 0.2; done
declare -A ir
for n in 60 300; do
  before=$(ls "$work/cg" | sort)
  "$PGBIN/pgbench" -n --random-seed=1 -M prepared -c 1 -t "$n" -f "$work/job.pgb" -h 127.0.0.1 -p "$port" -U postgres "r$n" \
    > "$work/pgb$n.log" 2>&1 || { cat "$work/pgb$n.log" >&2; exit 1; }
  # Each backend (pgbench's setup connection's, then its client's) writes its counts when it
  # exits, after pgbench disconnects; the client's is the larger.
  ir[$n]=0
  sleep 2
  for _ in $(seq 1 300); do
    for f in $(comm -13 <(echo "$before") <(ls "$work/cg" | sort)); do
      v=$(awk '/^summary:/ {print $2}' "$work/cg/$f" 2>/dev/null)
      [ "${v:-0}" -gt "${ir[$n]}" ] && ir[$n]=$v
    done
    [ "${ir[$n]}" -gt 0 ] && break
    sleep 0.2
  done
done
echo "schema $upto${*:+ + $*}: $(( (ir[300] - ir[60]) / 240 )) instructions per ${per:-create+start} (Ir 60 jobs ${ir[60]}, 300 jobs ${ir[300]})"
