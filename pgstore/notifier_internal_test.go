package pgstore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/internal/testing/testenv/testtime"
	"github.com/convsvc/convsvc/internal/testing/testpg"
)

// TestNotifier_SendsWhatPiledUpInOneTransaction: payloads handed to the notifier while its
// send waits (here for the pool's one connection, which the test holds) leave together, in
// one transaction after it: 100 calls' payloads take at most two transactions, where one per
// call took 100. Every payload arrives, in the order handed over, and Close returns only
// after sending what was pending.
func TestNotifier_SendsWhatPiledUpInOneTransaction(t *testing.T) {
	url := testpg.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(2*time.Minute))
	defer cancel()
	s, err := Open(ctx, url, Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			s.Close()
		}
	}()
	listener, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(context.Background())
	if _, err := listener.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		t.Fatal(err)
	}

	held, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 1; i <= 100; i += 2 { // two payloads a call, as a transaction's convsvc.notify holds them
		a, b := fmt.Sprintf("t:%03d", i), fmt.Sprintf("t:%03d", i+1)
		s.notes.send(a + "," + b)
		want = append(want, a, b)
	}
	s.notes.send("") // a quiet call's: nothing
	held.Release()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	if n := s.notes.sends.Load(); n < 1 || n > 2 {
		t.Errorf("50 calls' payloads took %d transactions, want 1 or 2", n)
	}
	var got []string
	for len(got) < len(want) {
		n, err := listener.WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("after %d of %d payloads: %v", len(got), len(want), err)
		}
		got = append(got, n.Payload)
	}
	if !slices.Equal(got, want) {
		t.Errorf("payloads arrived as\n%q\nwant\n%q", got, want)
	}
}
