package pgstore_test

import (
	"fmt"
	"testing"
)

// TestMigrate_0033KeyedStartAnswersAsBefore: 0033's start (0028's fast path, now also for a
// job whose cache key finds no entry) answers every case of startCases and of the cache's own
// cases as before, on the schema before 0033 and after it, through convsvc_start_job and
// through convsvc_start_job_gated: a hit still finishes the job at its start, a miss queues it
// with its key, a start that withholds the checksum the job declared drops the key. And a
// keyed start that misses no longer waits for its account's row (before 0033: gives up after
// lock_timeout), while a hit, which moves cents, still does. Fails with the fast path's
// lookup dropped (hits queued), its checksum rule dropped (a withheld checksum keeps the key)
// or its cap, max_queued or expiry checks dropped for keyed jobs.
func TestMigrate_0033KeyedStartAnswersAsBefore(t *testing.T) {
	if testing.Short() {
		t.Skip("applies every migration to two new databases: the plain run covers it")
	}
	cases := append([]startCase{
		{name: "cache key, entry", jobSHA: "hit", cacheBase: "b1", sha: "hit", want: "succeeded sha=hit base=b1 etag=e", hit: true},
		{name: "cache key given at start, entry", cacheBase: "b1", sha: "hit", want: "succeeded sha=hit base=b1 etag=e", hit: true},
		{name: "cache key given at start, no entry", cacheBase: "b1", sha: "miss", want: "queued sha=miss base=b1 etag=e", queued: true},
		{name: "another base's entry", cacheBase: "b2", sha: "hit", want: "queued sha=hit base=b2 etag=e", queued: true},
		{name: "cache key, entry, checksum withheld", jobSHA: "hit", cacheBase: "b1", want: "queued sha=hit base= etag=e", queued: true},
		{name: "cache key, checksum differs", jobSHA: "abc", cacheBase: "b1", sha: "def", want: "CVFB0"},
		{name: "cache key, size differs", cacheBase: "b1", sha: "miss", size: 11, want: "CVFB0"},
		{name: "cache key, expired", cacheBase: "b1", sha: "miss", expired: true, want: "CV404"},
		{name: "cache key, another account's", cacheBase: "b1", sha: "miss", caller: "acct_ls_other", want: "CV404"},
		{name: "cache key, cap reached", account: "acct_ls_full", cacheBase: "b1", sha: "miss", want: "CV403"},
		{name: "cache key, max_queued full", account: "acct_ls_qfull", cacheBase: "b1", sha: "miss", want: "CV429"},
		{name: "cache key, already queued", status: "queued", cacheBase: "b1", sha: "miss", want: "queued sha= base=b1 etag="},
	}, startCases...)
	forms := []struct {
		name  string
		start startFunc
	}{{"p", startAs}, {"g", startGatedAs}}
	for _, version := range []int{32, 33} {
		t.Run(fmt.Sprintf("schema %d", version), func(t *testing.T) {
			url, conn, ctx := migratedConn(t, version)
			startFixture(t, conn)
			if _, err := conn.Exec(ctx, `INSERT INTO cache_entries (key, object, output_bytes, output_sha256, output_attempt,
					output_verified, last_used)
				VALUES (convsvc_cache_key('b1', 'hit'), 'job_ls_cached', 5, 'out', 1, true, now())`); err != nil {
				t.Fatal(err)
			}
			for _, form := range forms {
				runStartCases(t, conn, form.name, cases, form.start, func(id string) string { return "q:" + id })
				if _, err := conn.Exec(ctx, `INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes,
						created_at, expires_at, cache_base)
					VALUES ($1, 'acct_ls', 'created', 'png', 'jpeg', 10, now(), now() + interval '1 day', 'b1'),
						($2, 'acct_ls', 'created', 'png', 'jpeg', 10, now(), now() + interval '1 day', 'b1')`,
					"job_ls_miss_"+form.name, "job_ls_hit_"+form.name); err != nil {
					t.Fatal(err)
				}
			}

			holdAccount(t, url, conn, "acct_ls")
			wantMiss := "queued sha=miss base=b1 etag=e"
			if version < 33 {
				wantMiss = "55P03" // lock_not_available
			}
			for _, form := range forms {
				if got, _ := form.start(t, conn, "acct_ls", "job_ls_miss_"+form.name, 10, "miss"); got != wantMiss {
					t.Errorf("%s: a keyed start that misses while the account's row is held answers %q, want %q", form.name, got, wantMiss)
				}
				if got, _ := form.start(t, conn, "acct_ls", "job_ls_hit_"+form.name, 10, "hit"); got != "55P03" {
					t.Errorf("%s: a keyed start that hits while the account's row is held answers %q, want 55P03 (it moves cents)", form.name, got)
				}
			}
		})
	}
}
