package pgstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// keptKey makes an account with capCents and a key, and has s authenticate one write of it
// (AuthenticateWrite, which keeps the key), so that CachedWriteGate gives its gates.
func keptKey(t *testing.T, s *pgstore.Store, capCents int64) (store.Account, string) {
	t.Helper()
	acct := account(t, s, capCents)
	_, secret, err := s.CreateKey(acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, allowed, _, _, err := s.AuthenticateWrite(secret, 120, time.Minute); err != nil || !allowed {
		t.Fatalf("first write: %v %v", allowed, err)
	}
	return acct, secret
}

// gate is a pending gate of a kept key.
func gate(t *testing.T, s *pgstore.Store, secret string, limit int) *store.WriteGate {
	t.Helper()
	_, g, ok := s.CachedWriteGate(secret, limit, time.Minute)
	if !ok {
		t.Fatal("the store did not keep the key")
	}
	return g
}

// windowCount is how many writes the key's window holds now.
func windowCount(t *testing.T, s *pgstore.Store, keyID string) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(context.Background(), `SELECT coalesce((SELECT cardinality(times) FROM rate_windows WHERE key_id = $1), 0)`, keyID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWriteGate_LocksTheRateWindowFirst holds pgstore/cache.go's lock order for a gated start
// and create: the key's rate_windows row before the job's row and the account's (Import,
// which locks whole tables, takes rate_windows first too: TestImport_LocksTablesInOrder); a
// plain start takes no lock of the account's row (migration 0028).
func TestWriteGate_LocksTheRateWindowFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("SQL alone, no Go concurrency: the plain run covers it")
	}
	url := testpg.NewDatabase(t)
	s := open(t, url, pgstore.Options{})
	acct, secret := keptKey(t, s, 100)
	g := gate(t, s, secret, 120)
	job, _, err := s.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "gif", InputBytes: 10, Gate: g},
		func(store.Job) (store.Response, error) { return store.Response{Status: 200}, nil })
	if err != nil || !g.Ran || !g.Allowed {
		t.Fatalf("gated create: %v, gate %+v", err, g)
	}
	window := "SELECT 1 FROM rate_windows WHERE key_id = '" + g.Key.ID + "' FOR UPDATE"
	jobRow := "SELECT 1 FROM jobs WHERE id = '" + job.ID + "' FOR UPDATE"
	acctRow := "SELECT 1 FROM accounts WHERE id = '" + acct.ID + "' FOR UPDATE"
	locks := []string{window, jobRow, acctRow}
	g = gate(t, s, secret, 120)
	order, err := waitOrder(t, url, locks, func() error {
		_, err := s.StartSealedJob(acct.ID, job.ID, store.Upload{Size: 10, Gate: g})
		return err
	})
	if err != nil || !g.Ran || !g.Allowed {
		t.Fatalf("gated start: %v, gate %+v", err, g)
	}
	// Since migration 0028 a plain start reads its account without a lock: it finishes while
	// the account's row is still held.
	if want := locks[:2]; !slices.Equal(order, want) {
		t.Errorf("the gated start waited for\n%s\nwant\n%s", strings.Join(order, "\n"), strings.Join(want, "\n"))
	}
	locks = []string{window, acctRow}
	g = gate(t, s, secret, 120)
	order, err = waitOrder(t, url, locks, func() error {
		_, _, err := s.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "gif", InputBytes: 10, Gate: g},
			func(store.Job) (store.Response, error) { return store.Response{Status: 200}, nil })
		return err
	})
	if err != nil || !g.Ran || !g.Allowed {
		t.Fatalf("gated create: %v, gate %+v", err, g)
	}
	if !slices.Equal(order, locks) {
		t.Errorf("the gated create waited for\n%s\nwant\n%s", strings.Join(order, "\n"), strings.Join(locks, "\n"))
	}
}

// TestWriteGate_CountsOnceWhateverTheTransitionDoes: a gated create the function refuses (the
// cap), a gated start it leaves to the Go transaction (a size mismatch: CVFB0) and a gated
// create with an Idempotency-Key (the Go transaction only) each count exactly one write; a
// refused gate (a full window, then a revoked key) counts and writes nothing.
func TestWriteGate_CountsOnceWhateverTheTransitionDoes(t *testing.T) {
	if testing.Short() {
		t.Skip("SQL alone, no Go concurrency: the plain run covers it")
	}
	url := testpg.NewDatabase(t)
	s := open(t, url, pgstore.Options{})
	acct, secret := keptKey(t, s, 1)
	keyID := gate(t, s, secret, 1).Key.ID
	create := func(g *store.WriteGate, idem string) (store.Job, error) {
		job, _, err := s.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "gif", InputBytes: 10, Gate: g, IdempotencyKey: idem, RequestHash: "h"},
			func(store.Job) (store.Response, error) { return store.Response{Status: 200, Body: []byte("{}")}, nil })
		return job, err
	}
	step := func(name string, wantCount int, fn func(g *store.WriteGate) error, wantErr error) {
		t.Helper()
		g := gate(t, s, secret, 120)
		if err := fn(g); !errors.Is(err, wantErr) && !(wantErr == nil && err == nil) {
			t.Fatalf("%s: %v, want %v", name, err, wantErr)
		}
		if !g.Ran || !g.Allowed || g.Remaining != 120-wantCount {
			t.Fatalf("%s: gate %+v, want it allowed with %d left", name, g, 120-wantCount)
		}
		if got := windowCount(t, s, keyID); got != wantCount {
			t.Fatalf("%s: %d writes in the window, want %d", name, got, wantCount)
		}
	}
	var job store.Job
	step("create", 2, func(g *store.WriteGate) (err error) { job, err = create(g, ""); return err }, nil)
	step("create over the cap", 3, func(g *store.WriteGate) error { _, err := create(g, ""); return err }, store.ErrLimitReached)
	step("start with the wrong size", 4, func(g *store.WriteGate) error {
		_, err := s.StartSealedJob(acct.ID, job.ID, store.Upload{Size: 9, Gate: g})
		return err
	}, store.ErrSizeMismatch)
	step("create with an Idempotency-Key", 5, func(g *store.WriteGate) error { _, err := create(g, "idem-1"); return err }, nil)

	// A full window: refused, nothing counted or made.
	g := gate(t, s, secret, 5)
	if _, err := create(g, ""); !errors.Is(err, store.ErrRateLimited) || !g.Ran || g.Allowed || g.Reset <= 0 || g.Reset > time.Minute {
		t.Fatalf("create over the window: %v, gate %+v", err, g)
	}
	if got := windowCount(t, s, keyID); got != 5 {
		t.Fatalf("%d writes in the window after a refusal, want 5", got)
	}
	// The node saw the window full: the key takes AuthenticateWrite until it has room.
	if _, _, ok := s.CachedWriteGate(secret, 5, time.Minute); ok {
		t.Fatal("a key seen with a full window is still gated")
	}
	if _, allowed, _, _, err := s.AuthenticateWrite(secret, 120, time.Minute); err != nil || !allowed {
		t.Fatalf("write after the refusal: %v %v", allowed, err)
	}
	// Revoked (by another node: RevokeKey on a second store): refused, nothing counted or made.
	other := open(t, url, pgstore.Options{})
	g = gate(t, s, secret, 120)
	if _, err := other.RevokeKey(g.Key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := create(g, ""); !errors.Is(err, store.ErrUnauthorized) || !g.Ran || !g.Unauthorized || g.Allowed {
		t.Fatalf("create with a revoked key: %v, gate %+v", err, g)
	}
	if got := windowCount(t, s, keyID); got != 6 {
		t.Fatalf("%d writes in the window after the revoked create, want 6", got)
	}
	if _, _, ok := s.CachedWriteGate(secret, 120, time.Minute); ok {
		t.Fatal("a revoked key is still kept")
	}
	jobs, _, err := s.ListJobs(acct.ID, store.ListParams{Limit: 100})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("jobs %+v %v, want the two creates that passed", jobs, err)
	}
}
