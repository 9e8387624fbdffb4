package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// liveKey is what the key's rate_windows row remembers (migration 0029): the hash, account
// and presets_only it was last checked against, "" when it remembers none (or has no row).
func liveKey(t *testing.T, s *pgstore.Store, keyID string) string {
	t.Helper()
	var remembered string
	if err := s.Pool().QueryRow(context.Background(), `SELECT coalesce((SELECT encode(live_hash, 'hex') || ' ' || live_account || ' ' || live_presets_only
		FROM rate_windows WHERE key_id = $1), '')`, keyID).Scan(&remembered); err != nil {
		t.Fatal(err)
	}
	return remembered
}

// passWhileKeysLocked runs a pending gate of secret while another transaction holds
// api_keys in ACCESS EXCLUSIVE mode, so that any read of a key waits. It reports whether the
// gate read api_keys (it waited for the lock; it then runs to its end once the lock goes) and
// the gate's error.
func passWhileKeysLocked(t *testing.T, url string, s *pgstore.Store, secret string) (readKeys bool, err error) {
	t.Helper()
	ctx := context.Background()
	holder := connect(t, url)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	g := gate(t, s, secret, 120)
	done := make(chan error, 1)
	go func() { done <- s.PassGate(g) }()
	var gateErr error
	finished := false
	over := func() bool {
		select {
		case gateErr = <-done:
			finished = true
		default:
		}
		return finished
	}
	if _, waited := waitBlocked(t, connect(t, url), []uint32{holder.PgConn().PID()}, over); waited {
		readKeys = true
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		gateErr = <-done
	}
	return readKeys, gateErr
}

// TestWriteGate_ReadsTheKeyOnceUntilItChanges: since migration 0029 a gate reads api_keys only
// when the key's rate_windows row does not remember the key: its first gate reads it (and the
// row then remembers the hash, account and presets_only), the next ones count without reading
// it (they finish while api_keys is locked against every read). A revocation by a plain
// UPDATE of api_keys (as a node of any release makes it), or the key's row deleted and made
// again with another secret under the same id (as an Import that replaces the data does),
// makes the row forget, so that the next gate of the old secret reads the key and is refused
// (CV401: ErrUnauthorized), counting nothing. Fails with the fast path reading the key
// (0026's gate), and without the trigger on api_keys.
func TestWriteGate_ReadsTheKeyOnceUntilItChanges(t *testing.T) {
	url := testpg.NewDatabase(t)
	s := open(t, url, pgstore.Options{})
	_, secret := keptKey(t, s, 100)
	keyID := gate(t, s, secret, 120).Key.ID
	if got := liveKey(t, s, keyID); got != "" {
		t.Fatalf("after AuthenticateWrite alone the row remembers %q, want nothing", got)
	}
	if readKeys, err := passWhileKeysLocked(t, url, s, secret); err != nil || !readKeys {
		t.Fatalf("first gate: %v, read the key %v; want it allowed after reading the key", err, readKeys)
	}
	remembered := liveKey(t, s, keyID)
	if remembered == "" {
		t.Fatal("the first gate left the row remembering no key")
	}
	for i := range 3 {
		if readKeys, err := passWhileKeysLocked(t, url, s, secret); err != nil || readKeys {
			t.Fatalf("gate %d: %v, read the key %v; want it allowed without reading the key", i+2, err, readKeys)
		}
	}
	if got := windowCount(t, s, keyID); got != 5 {
		t.Fatalf("%d writes in the window, want 5", got)
	}

	// Revoked by a plain UPDATE: forgotten, and the next gate refused.
	ctx := context.Background()
	if _, err := s.Pool().Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE id = $1`, keyID); err != nil {
		t.Fatal(err)
	}
	if got := liveKey(t, s, keyID); got != "" {
		t.Fatalf("after the revocation the row remembers %q", got)
	}
	g := gate(t, s, secret, 120)
	if err := s.PassGate(g); !errors.Is(err, store.ErrUnauthorized) || !g.Unauthorized || g.Allowed {
		t.Fatalf("gate of a revoked key: %v, %+v", err, g)
	}
	if got := windowCount(t, s, keyID); got != 5 {
		t.Fatalf("%d writes in the window after the refusal, want 5", got)
	}

	// Another key: remembered, then replaced under its id with another secret (delete and
	// insert, as Import does): the old secret's gate is refused.
	_, secret2 := keptKey(t, s, 100)
	g = gate(t, s, secret2, 120)
	key2 := g.Key.ID
	if err := s.PassGate(g); err != nil || liveKey(t, s, key2) == "" {
		t.Fatalf("gate of the second key: %v, remembered %q", err, liveKey(t, s, key2))
	}
	if _, err := s.Pool().Exec(ctx, `WITH d AS (DELETE FROM api_keys WHERE id = $1 RETURNING *)
		INSERT INTO api_keys (id, account_id, prefix, hash, created_at, presets_only)
		SELECT id, account_id, prefix, sha256(hash), created_at, presets_only FROM d`, key2); err != nil {
		t.Fatal(err)
	}
	if got := liveKey(t, s, key2); got != "" {
		t.Fatalf("after the key's row was replaced the rate row remembers %q", got)
	}
	g = gate(t, s, secret2, 120)
	if err := s.PassGate(g); !errors.Is(err, store.ErrUnauthorized) || !g.Unauthorized {
		t.Fatalf("gate of a replaced key's old secret: %v, %+v", err, g)
	}
}

// TestWriteGate_RevocationAndGateOrderOnTheRow: a revocation and a gate of the same key are
// ordered by the key's rate_windows row. A revocation that holds the row first (its trigger
// wrote it; not yet committed) makes a remembered key's gate wait, and once it commits the
// gate is refused. A gate that holds the row first (a gated create not yet committed) makes
// the revocation wait, and the key is forgotten after both. A key revoked before any write
// gets a row that remembers nothing (so that it meets a gate making the row), which
// PurgeRateWindows removes. Fails without the trigger, or with one that only updates rows
// that exist.
func TestWriteGate_RevocationAndGateOrderOnTheRow(t *testing.T) {
	if testing.Short() {
		t.Skip("lock waits between backends: the plain run covers it")
	}
	url := testpg.NewDatabase(t)
	s := open(t, url, pgstore.Options{})
	_, secret := keptKey(t, s, 100)
	g := gate(t, s, secret, 120)
	keyID := g.Key.ID
	if err := s.PassGate(g); err != nil || liveKey(t, s, keyID) == "" {
		t.Fatalf("first gate: %v, remembered %q", err, liveKey(t, s, keyID))
	}
	ctx := context.Background()

	// The revocation first.
	revoker := connect(t, url)
	tx, err := revoker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE id = $1`, keyID); err != nil {
		t.Fatal(err)
	}
	g = gate(t, s, secret, 120)
	done := make(chan error, 1)
	go func() { done <- s.PassGate(g) }()
	if _, waited := waitBlocked(t, connect(t, url), []uint32{revoker.PgConn().PID()}, nil); !waited {
		t.Fatal("the gate did not wait for the revocation")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, store.ErrUnauthorized) || !g.Unauthorized {
		t.Fatalf("gate behind a revocation: %v, %+v", err, g)
	}

	// The gate first: a second key, remembered; a transaction holds its row as a gate does
	// (the UPDATE of the gate's fast path), the revocation waits for it.
	_, secret2 := keptKey(t, s, 100)
	g = gate(t, s, secret2, 120)
	key2 := g.Key.ID
	if err := s.PassGate(g); err != nil {
		t.Fatal(err)
	}
	holder := connect(t, url)
	htx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer htx.Rollback(ctx)
	var count int
	if err := htx.QueryRow(ctx, `SELECT o_count FROM convsvc_write_gate($1, $2, $3, $4, 120, 60000000)`,
		g.Key.Hash, g.Key.ID, g.Key.AccountID, g.Key.PresetsOnly).Scan(&count); err != nil || count != 3 {
		t.Fatalf("gate in the holder's transaction: %d %v", count, err)
	}
	revoked := make(chan error, 1)
	go func() { _, err := s.RevokeKey(key2); revoked <- err }()
	if _, waited := waitBlocked(t, connect(t, url), []uint32{holder.PgConn().PID()}, nil); !waited {
		t.Fatal("the revocation did not wait for the gate")
	}
	if err := htx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-revoked; err != nil {
		t.Fatal(err)
	}
	if got := liveKey(t, s, key2); got != "" {
		t.Fatalf("after the gate and the revocation the row remembers %q", got)
	}

	// A key revoked before its first write: a row that remembers nothing, purged.
	_, secret3 := keptKey(t, s, 100)
	key3 := gate(t, s, secret3, 120).Key.ID
	if _, err := s.Pool().Exec(ctx, `DELETE FROM rate_windows WHERE key_id = $1`, key3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeKey(key3); err != nil {
		t.Fatal(err)
	}
	var times int
	if err := s.Pool().QueryRow(ctx, `SELECT cardinality(times) FROM rate_windows WHERE key_id = $1 AND live_hash IS NULL`, key3).Scan(&times); err != nil || times != 0 {
		t.Fatalf("the revoked key's row: %d entries, %v; want an empty row that remembers nothing", times, err)
	}
	if _, err := s.PurgeRateWindows(time.Minute); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM rate_windows WHERE key_id = $1`, key3).Scan(&left); err != nil || left != 0 {
		t.Fatalf("the empty row of a revoked key after the purge: %d rows, %v", left, err)
	}
}
