package pgstore_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// connect opens a connection of the test's own to url (an administrator's, or a node's that
// the test drives statement by statement), closed at t's cleanup.
func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// dyingNode is a transaction on a connection of its own, standing in for a node that is
// killed in the middle of it (kill).
type dyingNode struct {
	pgx.Tx
	pid uint32
}

// startDying begins a dying node's transaction on url.
func startDying(ctx context.Context, t *testing.T, url string) dyingNode {
	t.Helper()
	conn := connect(t, url)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return dyingNode{Tx: tx, pid: conn.PgConn().PID()}
}

// kill terminates the node's backend, as a SIGKILL of the node would drop its connection, and
// returns once the backend has exited, its transaction rolled back and its locks released (a
// claim would pass a job it still locks: SKIP LOCKED). The transaction then cannot commit.
func (d dyingNode) kill(ctx context.Context, t *testing.T, admin *pgx.Conn) {
	t.Helper()
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, int(d.pid)); err != nil {
		t.Fatal(err)
	}
	for {
		var alive bool
		if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)`, int(d.pid)).Scan(&alive); err != nil {
			t.Fatal(err)
		}
		if !alive {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the terminated backend never exited")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := d.Commit(ctx); err == nil {
		t.Fatal("a terminated backend's transaction committed")
	}
}

// querier is a connection or a pool.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// column returns the values of the query's one column.
func column[T any](t *testing.T, db querier, query string, args ...any) []T {
	t.Helper()
	rows, err := db.Query(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	values, err := pgx.CollectRows(rows, pgx.RowTo[T])
	if err != nil {
		t.Fatal(err)
	}
	return values
}

// waitBlocked waits until a backend waits for a lock that one of the backends pids holds,
// and returns that one; or returns false as soon as over (when not nil) reports that what the
// test waits for has ended without waiting.
func waitBlocked(t *testing.T, db querier, pids []uint32, over func() bool) (uint32, bool) {
	t.Helper()
	ints := make([]int32, len(pids))
	for i, pid := range pids {
		ints[i] = int32(pid)
	}
	deadline := time.Now().Add(waitBound)
	for {
		var holder *int32
		if err := db.QueryRow(context.Background(), `SELECT min(b) FROM pg_stat_activity a, unnest(pg_blocking_pids(a.pid)) b
			WHERE b = ANY($1)`, ints).Scan(&holder); err != nil {
			t.Fatal(err)
		}
		if holder != nil {
			return uint32(*holder), true
		}
		if over != nil && over() {
			return 0, false
		}
		if time.Now().After(deadline) {
			t.Fatalf("no backend waited for any of %v within %v", pids, waitBound)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitOrder runs run while the test holds each of locks (a statement taking a lock, each in
// a transaction of its own on a connection of its own to url, standing in for other nodes),
// and returns the order in which run waited for them: each time run's backend waits for one
// (PostgreSQL shows whose transaction it waits for), that transaction ends, and run goes on.
// A lock run never waited for is not in order. It returns run's error.
func waitOrder(t *testing.T, url string, locks []string, run func() error) (order []string, err error) {
	t.Helper()
	ctx := context.Background()
	admin := connect(t, url)
	held := map[uint32]string{} // a holder's backend pid: its lock
	txs := map[uint32]pgx.Tx{}
	for _, lock := range locks {
		conn := connect(t, url)
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, lock); err != nil {
			t.Fatalf("%s: %v", lock, err)
		}
		pid := conn.PgConn().PID()
		held[pid], txs[pid] = lock, tx
	}
	done := make(chan error, 1)
	go func() { done <- run() }()
	finished := false
	over := func() bool {
		select {
		case err = <-done:
			finished = true
		default:
		}
		return finished
	}
	for len(held) > 0 {
		pid, ok := waitBlocked(t, admin, slices.Collect(maps.Keys(held)), over)
		if !ok {
			break
		}
		order = append(order, held[pid])
		if err := txs[pid].Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		delete(held, pid)
	}
	for pid := range held {
		if err := txs[pid].Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !finished {
		select {
		case err = <-done:
		case <-time.After(waitBound):
			t.Fatalf("not done within %v", waitBound)
		}
	}
	return order, err
}
