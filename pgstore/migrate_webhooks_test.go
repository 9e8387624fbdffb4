package pgstore_test

import (
	"testing"
	"time"

	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// TestMigrate_0007WebhookDestinations: a database a previous release left at migration 0005,
// with pending and delivered deliveries, gets migration 0007 from Open: each pending delivery's
// destination is the one store.WebhookDestination computes from its URL (the SQL function and
// the Go one agree), and the fair claim serves them with the per-destination cap.
func TestMigrate_0007WebhookDestinations(t *testing.T) {
	url, conn, ctx := migratedConn(t, 5)
	urls := []string{
		"https://Hooks.Example.com/in?token=x",
		"https://hooks.example.com:443/other",
		"http://h.example:8080/",
		"HTTP://h.example/p#frag",
		"http://[2001:db8::1]/p",
		"https://[2001:DB8::1]:8443",
		"https://HOOKS.example.com/third", // the same destination as the second
	}
	if _, err := conn.Exec(ctx, `INSERT INTO accounts (id, name, spend_cap_cents, created_at) VALUES ('acct_old', 'old', 100, now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO webhook_endpoints (id, account_id, url, secret, created_at) VALUES ('whk_old', 'acct_old', 'https://x.example/', 'whsec_old', now())`); err != nil {
		t.Fatal(err)
	}
	for i, u := range urls {
		state := "pending"
		if i == 0 {
			state = "delivered" // history: not read by claims
		}
		if _, err := conn.Exec(ctx, `INSERT INTO webhook_deliveries (id, event_id, event_type, account_id, job_id, endpoint_id, url, job,
				created_at, state, next_attempt_at) VALUES ($1, 'evt', 'job.cancelled', 'acct_old', 'job_old', 'whk_old', $2, '{}', now(), $3, now())`,
			"evt.d"+string(rune('0'+i)), u, state); err != nil {
			t.Fatal(err)
		}
	}
	s := open(t, url, pgstore.Options{})
	for i, u := range urls {
		var dest string
		if err := conn.QueryRow(ctx, `SELECT destination FROM webhook_deliveries WHERE id = $1`, "evt.d"+string(rune('0'+i))).Scan(&dest); err != nil {
			t.Fatal(err)
		}
		want := store.WebhookDestination(u)
		if i == 0 {
			want = ""
		}
		if dest != want {
			t.Errorf("destination of %s after the migration = %q, want %q", u, dest, want)
		}
		var fromSQL string
		if err := conn.QueryRow(ctx, `SELECT webhook_destination($1)`, u).Scan(&fromSQL); err != nil || fromSQL != store.WebhookDestination(u) {
			t.Errorf("webhook_destination(%s) = %q, %v; Go says %q", u, fromSQL, err, store.WebhookDestination(u))
		}
	}
	// Six pending deliveries to five destinations: one each at a cap of 1.
	got, err := s.ClaimWebhookDeliveries(store.WebhookClaim{Limit: 10, Hold: time.Hour, PerDestination: 1})
	if err != nil {
		t.Fatal(err)
	}
	dests := map[string]bool{}
	for _, d := range got {
		dests[d.Destination] = true
	}
	if len(got) != 5 || len(dests) != 5 {
		t.Fatalf("claim with 1 per destination took %d to %v", len(got), dests)
	}
}
