package pgstore_test

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
)

// BenchmarkClaimWalk is the time of 100 claims in a row by one claim function (one statement,
// so one round trip; rolled back and vacuumed: every run starts from the same queue) beside 590 queued jobs of ten
// accounts, one at max_running 2: 0021's two entry points over the shared walk, and 0015's and
// 0019's functions as those migrations wrote them (defined again under another name), so
// that one run compares them. Each op runs each of the four once, in turn first, and each
// reports its median per claim (ns/claim-NAME).
func BenchmarkClaimWalk(b *testing.B) {
	url := testpg.NewDatabase(b)
	open(b, url, pgstore.Options{})
	conn := connect(b, url)
	ctx := context.Background()
	exec := func(sql string) {
		b.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			b.Fatalf("%.80s: %v", sql, err)
		}
	}
	for _, f := range []struct{ file, args string }{
		{"0015_transition_functions.sql", "(p_last text, p_node text, p_lease_us bigint)"},
		{"0019_cache_transitions.sql", "(p_last text, p_node text, p_lease_us bigint, p_price bigint"}} {
		src, err := os.ReadFile("migrations/" + f.file)
		if err != nil {
			b.Fatal(err)
		}
		fn := regexp.MustCompile(`(?s)CREATE FUNCTION convsvc_claim_job` + regexp.QuoteMeta(f.args) + `.*?END \$\$;`).FindString(string(src))
		if fn == "" {
			b.Fatalf("no convsvc_claim_job%s in %s", f.args, f.file)
		}
		exec(strings.Replace(fn, "convsvc_claim_job", "bench_claim_job", 1))
	}
	exec(`INSERT INTO accounts (id, name, spend_cap_cents, reserved_cents, created_at, max_running)
		SELECT 'acct_walk' || g, 'walk', 100000, CASE WHEN g = 0 THEN 500 ELSE 10 END, now(), CASE WHEN g = 5 THEN 2 END
		FROM generate_series(0, 9) g`)
	exec(`INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, created_at, expires_at, started_at)
		SELECT 'job_walk' || a || '_' || n, 'acct_walk' || a, 'queued', 'png', 'gif', 1, now(), now() + interval '1 day',
			now() + n * interval '1 ms'
		FROM generate_series(0, 9) a, generate_series(1, CASE WHEN a = 0 THEN 500 ELSE 10 END) n`)
	exec(`ANALYZE`)
	claims := func(call, account string) string {
		return `DO $$ DECLARE last text := ''; a text; BEGIN FOR i IN 1..100 LOOP
			SELECT ` + account + ` INTO a FROM ` + call + ` c; last := coalesce(a, ''); END LOOP; END $$`
	}
	variants := []struct{ name, sql string }{
		{"0019", claims(`bench_claim_job(last, 'n', 60000000, 1, false)`, `(c.o_job).account_id`)},
		{"0021-cache", claims(`convsvc_claim_job(last, 'n', 60000000, 1, false)`, `(c.o_job).account_id`)},
		{"0015", claims(`bench_claim_job(last, 'n', 60000000)`, `c.account_id`)},
		{"0021-plain", claims(`convsvc_claim_job(last, 'n', 60000000)`, `c.account_id`)},
	}
	times := make([][]time.Duration, len(variants))
	b.ResetTimer()
	for i := range b.N {
		for k := range variants {
			k = (k + i) % len(variants) // each op runs every variant, in turn first
			tx, err := conn.Begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			if _, err := tx.Exec(ctx, variants[k].sql); err != nil {
				b.Fatal(err)
			}
			times[k] = append(times[k], time.Since(t0))
			if err := tx.Rollback(ctx); err != nil {
				b.Fatal(err)
			}
			exec(`VACUUM jobs`) // the rolled-back claims' row versions, which the next walk would read
		}
	}
	for k, v := range variants {
		slices.Sort(times[k])
		b.ReportMetric(float64(times[k][len(times[k])/2].Nanoseconds())/100, "ns/claim-"+v.name)
	}
	b.ReportMetric(0, "ns/op")
}
