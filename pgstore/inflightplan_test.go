package pgstore_test

import (
	"fmt"
	"testing"
)

// TestMigrate_0034InflightLookupsUseTheKey runs a burst of conversions' worth of rows through
// cache_inflight (20,000 inserted, then deleted), vacuums it as autovacuum would, and then a
// keyed claim and its finish: the claim's flight (convsvc_cache_flight) looks the key up and
// the finish (convsvc_finish_common) deletes it. Before migration 0034 the vacuum truncated
// the emptied table, and the plans made then scanned it whole; from 0034 the vacuum keeps its
// pages and both statements take the primary key. The scans are counted by
// pg_stat_xact_user_tables around each call.
func TestMigrate_0034InflightLookupsUseTheKey(t *testing.T) {
	if testing.Short() {
		t.Skip("applies every migration to two new databases: the plain run covers it")
	}
	for _, version := range []int{33, 34} {
		t.Run(fmt.Sprintf("schema %d", version), func(t *testing.T) {
			_, conn, ctx := migratedConn(t, version)
			for _, sql := range []string{
				`INSERT INTO accounts (id, name, spend_cap_cents, created_at, reserved_cents)
					VALUES ('acct_if', 'if', 1000, now(), 1)`,
				`INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, created_at,
						expires_at, started_at, cache_base, input_sha256)
					VALUES ('job_if', 'acct_if', 'queued', 'png', 'gif', 10, now(), now() + interval '1 day', now(),
						'png>gif', 'in')`,
				`INSERT INTO cache_inflight (key, job_id) SELECT md5(g::text), 'job_burst_' || g FROM generate_series(1, 20000) g`,
				`DELETE FROM cache_inflight`,
				`VACUUM ANALYZE cache_inflight`,
			} {
				if _, err := conn.Exec(ctx, sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			var pages int64
			if err := conn.QueryRow(ctx, `SELECT pg_relation_size('cache_inflight') / 8192`).Scan(&pages); err != nil {
				t.Fatal(err)
			}
			if kept := version >= 34; (pages > 0) != kept {
				t.Fatalf("after the vacuum cache_inflight has %d pages; want them kept: %v", pages, kept)
			}

			// scans runs call in a transaction of its own and returns its sequential and index
			// scans of cache_inflight, and the call's first column.
			scans := func(call string) (seq, idx int64, got string) {
				t.Helper()
				tx, err := conn.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback(ctx)
				// The view holds the connection's counts not yet reported, earlier
				// transactions' included: the call's are the difference.
				count := func() (seq, idx int64) {
					if err := tx.QueryRow(ctx, `SELECT seq_scan, coalesce(idx_scan, 0) FROM pg_stat_xact_user_tables
							WHERE relname = 'cache_inflight'`).Scan(&seq, &idx); err != nil {
						t.Fatal(err)
					}
					return seq, idx
				}
				seq0, idx0 := count()
				if err := tx.QueryRow(ctx, call).Scan(&got); err != nil {
					t.Fatalf("%s: %v", call, err)
				}
				seq, idx = count()
				seq, idx = seq-seq0, idx-idx0
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				return seq, idx, got
			}
			wantSeq := version < 34
			seq, idx, got := scans(`SELECT (c.o_job).status || ' ' || coalesce(c.o_wait_for, '-')
				FROM convsvc_claim_job('', 'node_if', 60000000, 1, true) c`)
			if got != "running -" {
				t.Fatalf("claim: %q, want the job running as its key's converter", got)
			}
			if (seq > 0) != wantSeq || idx == 0 {
				t.Errorf("the claim's flight scanned cache_inflight %d times sequentially and %d by an index; want sequential: %v",
					seq, idx, wantSeq)
			}
			seq, idx, got = scans(`SELECT status FROM convsvc_finish_job('job_if', 1, 'succeeded', '', '', '', 5, 'out', NULL,
				true, true, 0)`)
			if got != "succeeded" {
				t.Fatalf("finish: %q, want succeeded", got)
			}
			if (seq > 0) != wantSeq || (!wantSeq && idx == 0) {
				t.Errorf("the finish's delete scanned cache_inflight %d times sequentially and %d by an index; want sequential: %v",
					seq, idx, wantSeq)
			}
			var left int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM cache_inflight`).Scan(&left); err != nil {
				t.Fatal(err)
			}
			if left != 0 {
				t.Errorf("%d rows left in cache_inflight after the finish, want 0", left)
			}
		})
	}
}
