package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// migratedConn makes a new database as a release of schema upTo left it: migrations/0001 ...
// upTo, but those in skip, applied as that release did (pgstore.migrate), each file in its own
// transaction with its schema_migrations row. It returns the database's URL, a connection to
// it, closed at t's cleanup, and a context that bounds the test.
func migratedConn(t *testing.T, upTo int, skip ...int) (string, *pgx.Conn, context.Context) {
	t.Helper()
	url := testpg.NewDatabase(t)
	conn := connect(t, url)
	migrateTo(t, conn, upTo, skip...)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scale(2*time.Minute))
	t.Cleanup(cancel)
	return url, conn, ctx
}

// migrateTo applies migratedConn's migrations to the database at conn.
func migrateTo(t *testing.T, conn *pgx.Conn, upTo int, skip ...int) {
	t.Helper()
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	for _, f := range files {
		name := filepath.Base(f)
		v, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil {
			t.Fatal(err)
		}
		if v > upTo {
			break
		}
		if slices.Contains(skip, v) {
			continue
		}
		sql, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, v, name)
			return err
		})
		if err != nil {
			t.Fatalf("migration %s: %v", name, err)
		}
	}
}

// insertAccount adds an account with a cap of 100,000 cents, as the previous release's API
// would have, for a migration test's own rows.
func insertAccount(t *testing.T, ctx context.Context, conn *pgx.Conn, id string) {
	t.Helper()
	if _, err := conn.Exec(ctx, `INSERT INTO accounts (id, name, spend_cap_cents, created_at) VALUES ($1, 'l', 100000, now())`, id); err != nil {
		t.Fatal(err)
	}
}

// explain is the text of EXPLAIN's plan for query.
func explain(t *testing.T, conn *pgx.Conn, query string, args ...any) string {
	t.Helper()
	rows, err := conn.Query(context.Background(), "EXPLAIN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// accountsIndexScans is idx_scan of the accounts_created index, as the statistics show it.
func accountsIndexScans(t *testing.T, conn *pgx.Conn) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(context.Background(), `SELECT coalesce(sum(idx_scan), 0)::bigint FROM pg_stat_user_indexes
		WHERE relname = 'accounts' AND indexrelname = 'accounts_created'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMigrate_0005AccountsPagingIndex: a database a previous release left at migration 0004,
// with 6,000 accounts (pairs of them created in the same second, so seq breaks the ties), gets
// migration 0005 from Open: schema_migrations records it, the accounts table has the
// (created_at, seq) index it lacked, AccountsPage lists the old accounts in their order across
// pages, the planner reads both of AccountsPage's queries (first page, page after a cursor)
// through the index, and AccountsPage's own queries do use it (its idx_scan grows).
func TestMigrate_0005AccountsPagingIndex(t *testing.T) {
	url, conn, ctx := migratedConn(t, 4)
	const accounts = 6000
	if _, err := conn.Exec(ctx, `INSERT INTO accounts (id, name, spend_cap_cents, created_at)
		SELECT 'acct_old' || lpad(g::text, 5, '0'), 'old', 100, timestamptz '2026-01-01 00:00:00Z' + (g / 2) * interval '1 second'
		FROM generate_series(1, $1::int) g ORDER BY g`, accounts); err != nil {
		t.Fatal(err)
	}
	var before int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE tablename = 'accounts' AND indexdef LIKE '%(created_at, seq)%'`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if before != 0 {
		t.Fatalf("the 0004 schema already has %d (created_at, seq) index on accounts", before)
	}

	s := open(t, url, pgstore.Options{})
	if versions := column[int](t, conn, `SELECT version FROM schema_migrations ORDER BY version`); !slices.Contains(versions, 5) || !slices.Equal(versions, embeddedMigrations(t)) {
		t.Fatalf("schema_migrations %v after Open, want 5 among %v", versions, embeddedMigrations(t))
	}
	var def string
	if err := conn.QueryRow(ctx, `SELECT indexdef FROM pg_indexes WHERE tablename = 'accounts' AND indexname = 'accounts_created'`).Scan(&def); err != nil {
		t.Fatalf("index accounts_created after Open: %v", err)
	}
	if !strings.HasSuffix(def, "(created_at, seq)") {
		t.Fatalf("accounts_created is %q, want it on (created_at, seq)", def)
	}

	// The old accounts page in (created_at, seq) order: g's order.
	scansBefore := accountsIndexScans(t, conn)
	var got []string
	for after := ""; ; {
		page, more, err := s.AccountsPage(store.PageParams{Limit: 1000, StartingAfter: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range page {
			got = append(got, a.ID)
		}
		if !more {
			break
		}
		after = page[len(page)-1].ID
	}
	if len(got) != accounts {
		t.Fatalf("AccountsPage listed %d accounts, want %d", len(got), accounts)
	}
	for i, id := range got {
		if want := fmt.Sprintf("acct_old%05d", i+1); id != want {
			t.Fatalf("account %d is %s, want %s", i, id, want)
		}
	}

	// The planner takes the index for AccountsPage's two queries (page.go), with statistics.
	if _, err := conn.Exec(ctx, `ANALYZE accounts`); err != nil {
		t.Fatal(err)
	}
	first := explain(t, conn, `SELECT id FROM accounts ORDER BY created_at, seq LIMIT $1`, 21)
	next := explain(t, conn, `SELECT id FROM accounts
		WHERE (created_at, seq) > (SELECT created_at, seq FROM accounts WHERE id = $1)
		ORDER BY created_at, seq LIMIT $2`, "acct_old03000", 21)
	for name, plan := range map[string]string{"first page": first, "page after a cursor": next} {
		if !strings.Contains(plan, "accounts_created") || strings.Contains(plan, "Sort") {
			t.Errorf("%s: the plan does not read the accounts_created index in order:\n%s", name, plan)
		}
	}

	// AccountsPage's own queries used it: the statistics count its scans once the store's
	// backends flush them, which they do as they exit (closing the store; Close may run twice).
	s.Close()
	deadline := time.Now().Add(testenv.Scale(waitBound))
	for accountsIndexScans(t, conn) < scansBefore+accounts/1000 {
		if time.Now().After(deadline) {
			t.Fatalf("accounts_created was scanned %d times by 6 pages, want at least 6", accountsIndexScans(t, conn)-scansBefore)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMigrate_AppliesAMissingLowerNumber: migrations written side by side can land out of
// their numbers' order, so a database can hold 0011-0014 without 0010. Open applies 0010 all
// the same (not only numbers above the newest recorded), and the batches it creates work.
func TestMigrate_AppliesAMissingLowerNumber(t *testing.T) {
	all := embeddedMigrations(t)
	url, conn, ctx := migratedConn(t, slices.Max(all), 10)
	open(t, url, pgstore.Options{})
	if versions := column[int](t, conn, `SELECT version FROM schema_migrations ORDER BY version`); !slices.Equal(versions, all) {
		t.Fatalf("schema_migrations %v after Open, want %v", versions, all)
	}
	var batches int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_name = 'batches'`).Scan(&batches); err != nil || batches != 1 {
		t.Fatalf("table batches after Open: %d (%v), want it made by 0010", batches, err)
	}
}

// TestMigrate_0019KeepsCacheInFlight: a database a previous release left at migration 0018
// in the middle of the cache's work (one account, four jobs of one cache key: A running as
// the key's converter in cache_inflight, B running and waiting for A, C queued with the key,
// D created with input_sha256, each holding its cent) gets 0019 from Open, and the new
// transition functions take that state as the Go transactions would have: A's finish stores
// the entry and ends the flight, B is answered from it, C is answered at claim and D at start,
// each charged 1 cent; no reservation is left and the ledger and the cache's references check.
func TestMigrate_0019KeepsCacheInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("applies every migration to a new database: the plain run covers it")
	}
	url, conn, ctx := migratedConn(t, 18)
	const base, sha = "png>gif;migrate", "5f8f2b8a6b7c3e1d0a9f8e7d6c5b4a392817161514131211100f0e0d0c0b0a09"
	key := store.CacheKey(base, sha)
	ids := map[string]string{}
	for _, name := range []string{"A", "B", "C", "D"} {
		ids[name] = store.NewJobID(time.Now())
	}
	if _, err := conn.Exec(ctx, `INSERT INTO accounts (id, name, spend_cap_cents, reserved_cents, created_at)
		VALUES ('acct_migrate19', 'm', 100, 4, now())`); err != nil {
		t.Fatal(err)
	}
	for name, status := range map[string]string{"A": "running", "B": "running", "C": "queued", "D": "created"} {
		if _, err := conn.Exec(ctx, `INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, created_at,
				expires_at, started_at, attempt, lease_owner, lease_expires_at, input_sha256, cache_base, source_url)
			VALUES ($1, 'acct_migrate19', $2, 'png', 'gif', 10, now(), now() + interval '1 day',
				CASE WHEN $2 <> 'created' THEN now() END, CASE WHEN $2 = 'running' THEN 1 ELSE 0 END,
				CASE WHEN $2 = 'running' THEN 'old-node' END, CASE WHEN $2 = 'running' THEN now() + interval '1 hour' END,
				$3, $4, CASE WHEN $2 = 'queued' THEN 'https://example.com/in.png' ELSE '' END)`,
			ids[name], status, sha, base); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO cache_inflight (key, job_id) VALUES ($1, $2)`, key, ids["A"]); err != nil {
		t.Fatal(err)
	}

	s := open(t, url, pgstore.Options{NodeID: "new-node"})
	a, err := s.FinishJob(ids["A"], 1, store.Outcome{Output: &store.Output{Bytes: 7, SHA256: strings.Repeat("c", 64)}})
	if err != nil || a.Status != store.StatusSucceeded {
		t.Fatalf("finish A: %+v %v", a, err)
	}
	var inflight int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM cache_inflight`).Scan(&inflight); err != nil || inflight != 0 {
		t.Fatalf("cache_inflight after A's finish: %d rows (%v), want 0", inflight, err)
	}
	if e, ok, err := s.CachedOutput(key); err != nil || !ok || e.Object != ids["A"] || e.Output.Bytes != 7 {
		t.Fatalf("entry after A's finish: %+v %v %v", e, ok, err)
	}
	b, hit, err := s.FinishFromCache(ids["B"], 1)
	if err != nil || !hit || b.Status != store.StatusSucceeded || b.Output.Object != ids["A"] {
		t.Fatalf("B from the cache: %+v %v %v", b, hit, err)
	}
	if claimed, ok, err := s.ClaimJob(); err != nil || ok {
		t.Fatalf("claim: %+v %v %v, want C answered from the cache and nothing left to claim", claimed, ok, err)
	}
	d, err := s.StartSealedJob("acct_migrate19", ids["D"], store.Upload{Size: 10, SHA256: sha})
	if err != nil || d.Status != store.StatusSucceeded || !d.Output.Cached {
		t.Fatalf("start D: %+v %v", d, err)
	}
	for _, name := range []string{"B", "C", "D"} {
		j, err := s.Job("acct_migrate19", ids[name])
		if err != nil || j.Status != store.StatusSucceeded || j.Output.Object != ids["A"] || j.Charge() != 1 {
			t.Fatalf("job %s: %+v %v, want succeeded from A's output for 1 cent", name, j, err)
		}
	}
	ledger(t, s, "acct_migrate19", 0, 4)
	if err := s.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
	if held, err := s.OutputHeld(ids["A"]); err != nil || !held {
		t.Fatalf("A's output held: %v %v, want held by 3 references", held, err)
	}
}

// TestMigrate_0021ClaimsQueuedJobsFairly: a database a previous release left at migration
// 0020 with jobs queued for three accounts (b at max_running 1; c's three jobs of one cache
// key) gets 0021 from Open, which moves both claim functions onto one walk. A node of the
// previous release, calling 0015's convsvc_claim_job (its notification sent after the commit,
// then FinishFromCache in a transaction of its own, as that release did), and a new node
// (0019's, with the flight) then claim the queue as both did before: the accounts in turn
// after each one's last, oldest job first, b's second job passed over while its first runs,
// and c's twins waiting for the first one's conversion; a notification of each claim
// reaches the other node.
func TestMigrate_0021ClaimsQueuedJobsFairly(t *testing.T) {
	if testing.Short() {
		t.Skip("applies every migration to a new database: the plain run covers it")
	}
	url, conn, ctx := migratedConn(t, 20)
	const base, sha = "png>gif;migrate21", "0f8f2b8a6b7c3e1d0a9f8e7d6c5b4a392817161514131211100f0e0d0c0b0a09"
	ids := map[string]string{}
	names := []string{"a1", "b1", "c1", "a2", "b2", "c2", "a3", "c3"} // their order in time
	for i, name := range names {
		acct := "acct_m21" + name[:1]
		if i < 3 {
			maxRunning := map[string]any{"a": nil, "b": 1, "c": nil}[name[:1]]
			if _, err := conn.Exec(ctx, `INSERT INTO accounts (id, name, spend_cap_cents, reserved_cents, created_at, max_running)
				VALUES ($1, 'm', 100, 0, now(), $2)`, acct, maxRunning); err != nil {
				t.Fatal(err)
			}
		}
		ids[name] = store.NewJobID(time.Now())
		var cacheBase, inputSHA *string
		if name[0] == 'c' {
			cacheBase, inputSHA = &[]string{base}[0], &[]string{sha}[0]
		}
		if _, err := conn.Exec(ctx, `INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, created_at,
				expires_at, started_at, input_sha256, cache_base, source_url)
			VALUES ($1, $2, 'queued', 'png', 'gif', 10, now(), now() + interval '1 day', now() + $3 * interval '1 millisecond',
				$4, $5, 'https://example.com/in.png')`, ids[name], acct, i, inputSHA, cacheBase); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `UPDATE accounts SET reserved_cents = reserved_cents + 1 WHERE id = $1`, acct); err != nil {
			t.Fatal(err)
		}
	}
	name := map[string]string{}
	for n, id := range ids {
		name[id] = n
	}

	s := open(t, url, pgstore.Options{NodeID: "new-node"})
	other := open(t, url, pgstore.Options{NodeID: "other-node"})
	if versions := column[int](t, conn, `SELECT version FROM schema_migrations ORDER BY version`); !slices.Contains(versions, 21) || !slices.Equal(versions, embeddedMigrations(t)) {
		t.Fatalf("schema_migrations %v after Open, want 21 among %v", versions, embeddedMigrations(t))
	}

	// oldClaim is the previous release's ClaimJob: 0015's function, its notifications sent
	// after the commit, then a job with a cache key's flight in a transaction of its own.
	oldClaim := func(last string) (got, waitFor string) {
		t.Helper()
		var acct string
		var attempt int
		var keyed bool
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, `SELECT id, account_id, attempt, cache_base IS NOT NULL FROM convsvc_claim_job($1, 'old-node', 60000000)`, last).
				Scan(&got, &acct, &attempt, &keyed)
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return "", ""
		} else if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `SELECT convsvc_send_notifies()`); err != nil {
			t.Fatal(err)
		}
		if keyed {
			j, hit, err := s.FinishFromCache(got, attempt)
			if err != nil || hit {
				t.Fatalf("flight of %s: %+v %v %v", name[got], j, hit, err)
			}
			waitFor = j.WaitFor
		}
		return name[got], name[waitFor]
	}
	newClaim := func() (got, waitFor string) {
		t.Helper()
		j, ok, err := s.ClaimJob()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return "", ""
		}
		return name[j.ID], name[j.WaitFor]
	}
	// claimed checks that claim took want (waiting for wantWait), and that the other node heard
	// of it.
	claimed := func(who string, claim func() (string, string), want, wantWait string) {
		t.Helper()
		var changed <-chan struct{}
		if want != "" {
			var stop func()
			changed, stop = other.WaitChange(ids[want])
			defer stop()
		}
		if got, waitFor := claim(); got != want || waitFor != wantWait {
			t.Fatalf("%s claimed %q waiting for %q, want %q waiting for %q", who, got, waitFor, want, wantWait)
		}
		if want == "" {
			return
		}
		select {
		case <-changed:
		case <-time.After(waitBound):
			t.Fatalf("the other node heard nothing of %s's claim of %s within %v", who, want, waitBound)
		}
	}

	claimed("the old node", func() (string, string) { return oldClaim("") }, "a1", "")
	claimed("the old node", func() (string, string) { return oldClaim("acct_m21a") }, "b1", "")
	claimed("the old node", func() (string, string) { return oldClaim("acct_m21b") }, "c1", "") // the key's converter
	claimed("the old node", func() (string, string) { return oldClaim("acct_m21c") }, "a2", "")
	claimed("the old node", func() (string, string) { return oldClaim("acct_m21a") }, "c2", "c1") // b at max_running
	claimed("the new node", newClaim, "a3", "")
	claimed("the new node", newClaim, "c3", "c1")
	claimed("the new node", newClaim, "", "") // a done, b at max_running, c done
	claimed("the old node", func() (string, string) { return oldClaim("acct_m21a") }, "", "")
	if _, err := s.FinishJob(ids["b1"], 1, store.Outcome{Output: &store.Output{Bytes: 1, SHA256: strings.Repeat("b", 64)}}); err != nil {
		t.Fatal(err)
	}
	claimed("the new node", newClaim, "b2", "")

	// Every claim was one: each job running its first attempt, then the twins answered from c1's
	// output and the ledger whole.
	var running int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE status = 'running' AND attempt = 1`).Scan(&running); err != nil || running != 7 {
		t.Fatalf("%d jobs running their first attempt (%v), want 7", running, err)
	}
	if _, err := s.FinishJob(ids["c1"], 1, store.Outcome{Output: &store.Output{Bytes: 7, SHA256: strings.Repeat("c", 64)}}); err != nil {
		t.Fatal(err)
	}
	for _, twin := range []string{"c2", "c3"} {
		if j, hit, err := s.FinishFromCache(ids[twin], 1); err != nil || !hit || j.Output.Object != ids["c1"] {
			t.Fatalf("%s from the cache: %+v %v %v", twin, j, hit, err)
		}
	}
	for _, n := range []string{"a1", "a2", "a3", "b2"} {
		if _, err := s.FinishJob(ids[n], 1, store.Outcome{ErrorCode: store.CodeConversionFailed, ErrorMessage: "no"}); err != nil {
			t.Fatal(err)
		}
	}
	ledger(t, s, "acct_m21a", 0, 0)
	ledger(t, s, "acct_m21b", 0, 1)
	ledger(t, s, "acct_m21c", 0, 3)
}
