package pgstore_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// fakeClockStore opens a store whose sessions read clock_timestamp() from a table: their
// search_path finds fakeclock.clock_timestamp before pg_catalog's (pg_catalog is listed
// last), so the rate window's SQL runs at a time the test sets, to the microsecond. base is
// a store of the same database on the real clock; setNow sets the fake one.
func fakeClockStore(t *testing.T) (s, base *pgstore.Store, setNow func(time.Time)) {
	t.Helper()
	dbURL := testpg.NewDatabase(t)
	base = open(t, dbURL, pgstore.Options{}) // migrates
	ctx := context.Background()
	if _, err := base.Pool().Exec(ctx, `CREATE SCHEMA fakeclock;
		CREATE TABLE fakeclock.now (at timestamptz NOT NULL);
		INSERT INTO fakeclock.now VALUES (now());
		CREATE FUNCTION fakeclock.clock_timestamp() RETURNS timestamptz LANGUAGE sql AS 'SELECT at FROM fakeclock.now'`); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", "public,fakeclock,pg_catalog")
	u.RawQuery = q.Encode()
	s = open(t, u.String(), pgstore.Options{})
	return s, base, func(at time.Time) {
		t.Helper()
		if _, err := base.Pool().Exec(ctx, `UPDATE fakeclock.now SET at = $1`, at); err != nil {
			t.Fatal(err)
		}
		var got time.Time
		if err := s.Pool().QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&got); err != nil || !got.Equal(at) {
			t.Fatalf("the fake clock reads %v, %v; want %v", got, err, at)
		}
	}
}

// setWindow makes the key's rate_windows row hold exactly times (no row: nil).
func setWindow(t *testing.T, s *pgstore.Store, keyID string, times []time.Time) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Pool().Exec(ctx, `DELETE FROM rate_windows WHERE key_id = $1`, keyID); err != nil {
		t.Fatal(err)
	}
	if times != nil {
		if _, err := s.Pool().Exec(ctx, `INSERT INTO rate_windows (key_id, times) VALUES ($1, $2)`, keyID, times); err != nil {
			t.Fatal(err)
		}
	}
}

// storedWindow is the key's rate_windows row (no row: nil).
func storedWindow(t *testing.T, s *pgstore.Store, keyID string) []time.Time {
	t.Helper()
	var times []time.Time
	err := s.Pool().QueryRow(context.Background(), `SELECT times FROM rate_windows WHERE key_id = $1`, keyID).Scan(&times)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	return times
}

// TestRateWindow_ExactAtTheMicrosecond counts one write into windows set up to the
// microsecond, at a fixed clock, through the three ways a write is counted on PostgreSQL (the
// write gate's SQL, AllowWrite, AuthenticateWrite), and wants what migration 0024's SQL did:
// an entry counts while t > now - window, so the one exactly at the cut-off has left; a write
// into a window holding limit entries is refused with nothing changed and the reset until its
// oldest entry leaves (CVRL0's DETAIL, in microseconds); duplicate times count one by one; a
// key's first write makes its row. And what 0026 adds: the stored array stays sorted, even
// after the clock stepped back (a write is stored at the last entry's time then) and from an
// array the previous release left with its last entry out of order.
func TestRateWindow_ExactAtTheMicrosecond(t *testing.T) {
	if testing.Short() {
		t.Skip("SQL alone, no Go concurrency: the plain run covers it")
	}
	s, base, setNow := fakeClockStore(t)
	const window = time.Minute
	now := time.Date(2030, 1, 2, 3, 4, 5, 678901000, time.UTC)
	setNow(now)
	at := func(ds ...time.Duration) []time.Time {
		out := []time.Time{}
		for _, d := range ds {
			out = append(out, now.Add(d))
		}
		return out
	}
	const us = time.Microsecond
	cases := []struct {
		name  string
		row   []time.Time // the window before (nil: no row)
		limit int
		// Allowed: the window's count after the write and its oldest entry; refused (count 0):
		// the reset, and the row stays as it was.
		count  int
		oldest time.Duration
		reset  time.Duration
		stored []time.Time // the row after
	}{
		{name: "first write", row: nil, limit: 120,
			count: 1, oldest: 0, stored: at(0)},
		{name: "the entry at the cut-off has left, one a microsecond later counts", row: at(-window, -window+us, -time.Second), limit: 4,
			count: 3, oldest: -window + us, stored: at(-window+us, -time.Second, 0)},
		{name: "the entry at the cut-off leaves room for the last write", row: at(-window, -window+us, -time.Second), limit: 3,
			count: 3, oldest: -window + us, stored: at(-window+us, -time.Second, 0)},
		{name: "full window: refused, reset until the oldest leaves", row: at(-window+1500*time.Millisecond, -10*time.Second, -5*time.Second), limit: 3,
			reset: 1500 * time.Millisecond},
		{name: "full window whose oldest leaves in a microsecond", row: at(-window, -window+us, -window+2*us), limit: 2,
			reset: us},
		{name: "entries gone, room again", row: at(-window-2*time.Second, -window-time.Second, -30*time.Second, -time.Second), limit: 3,
			count: 3, oldest: -30 * time.Second, stored: at(-30*time.Second, -time.Second, 0)},
		{name: "duplicate times count one by one", row: at(-window, -window, -2*time.Second, -2*time.Second, -2*time.Second), limit: 4,
			count: 4, oldest: -2 * time.Second, stored: at(-2*time.Second, -2*time.Second, -2*time.Second, 0)},
		{name: "duplicate times fill the window", row: at(-window, -2*time.Second, -2*time.Second, -2*time.Second), limit: 3,
			reset: window - 2*time.Second},
		{name: "entries after now (the clock stepped back): stored at the last one's time", row: at(-10*time.Second, 3*time.Second), limit: 5,
			count: 3, oldest: -10 * time.Second, stored: at(-10*time.Second, 3*time.Second, 3*time.Second)},
		{name: "the previous release's last entry out of order", row: at(-window-time.Second, -time.Second, 5*time.Second, -2*time.Second), limit: 5,
			count: 4, oldest: -2 * time.Second, stored: at(-2*time.Second, -time.Second, 5*time.Second, 5*time.Second)},
		{name: "the previous release's last entry out of order and gone", row: at(-10*time.Second, -5*time.Second, -window-10*time.Second), limit: 4,
			count: 3, oldest: -10 * time.Second, stored: at(-10*time.Second, -5*time.Second, 0)},
		{name: "the previous release's last entry out of order, full", row: at(-20*time.Second, 5*time.Second, -10*time.Second), limit: 3,
			reset: 40 * time.Second},
	}
	acct := account(t, base, 1000)
	key, secret, err := base.CreateKey(acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		allowed   bool
		remaining int
		reset     time.Duration
	}
	paths := []struct {
		name  string
		write func(t *testing.T, limit int) result
	}{
		{"convsvc_write_gate", func(t *testing.T, limit int) result {
			var count int
			var oldest, at time.Time
			err := s.Pool().QueryRow(context.Background(), `SELECT o_count, o_oldest, o_now FROM convsvc_write_gate($1, $2, $3, $4, $5, $6)`,
				key.Hash, key.ID, key.AccountID, key.PresetsOnly, limit, window.Microseconds()).Scan(&count, &oldest, &at)
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "CVRL0" {
				reset, err := strconv.ParseInt(pgErr.Detail, 10, 64)
				if err != nil {
					t.Fatalf("CVRL0's DETAIL %q: %v", pgErr.Detail, err)
				}
				return result{reset: time.Duration(reset) * time.Microsecond}
			} else if err != nil {
				t.Fatal(err)
			}
			if !at.Equal(now) {
				t.Errorf("o_now %v, want the clock's %v", at, now)
			}
			return result{true, limit - count, oldest.Add(window).Sub(at)}
		}},
		{"AllowWrite", func(t *testing.T, limit int) result {
			allowed, remaining, reset, err := s.AllowWrite(key.ID, limit, window)
			if err != nil {
				t.Fatal(err)
			}
			return result{allowed, remaining, reset}
		}},
		{"AuthenticateWrite", func(t *testing.T, limit int) result {
			got, allowed, remaining, reset, err := s.AuthenticateWrite(secret, limit, window)
			if err != nil || got.ID != key.ID {
				t.Fatalf("key %q, %v; want %s", got.ID, err, key.ID)
			}
			return result{allowed, remaining, reset}
		}},
	}
	for _, c := range cases {
		for _, p := range paths {
			t.Run(c.name+"/"+p.name, func(t *testing.T) {
				setWindow(t, base, key.ID, c.row)
				got := p.write(t, c.limit)
				want := result{reset: c.reset}
				stored := c.row
				if c.count > 0 {
					want = result{true, c.limit - c.count, c.oldest + window}
					stored = c.stored
				}
				if got != want {
					t.Errorf("got %+v, want %+v", got, want)
				}
				if after := storedWindow(t, base, key.ID); !slices.EqualFunc(after, stored, time.Time.Equal) {
					t.Errorf("window after the write:\n got %v\nwant %v", after, stored)
				}
			})
		}
	}
}

// previousReleaseCount is how a node of the previous release (migration 0024's Go side,
// AllowWrite) counts a write in the same rows; kept here to test the rolling upgrade.
const previousReleaseCount = `INSERT INTO rate_windows AS r (key_id, times) VALUES ($1, ARRAY[clock_timestamp()])
	ON CONFLICT (key_id) DO UPDATE SET times =
		ARRAY(SELECT t FROM unnest(r.times) t WHERE t > clock_timestamp() - $3 * interval '1 microsecond' ORDER BY t) || clock_timestamp()
	WHERE cardinality(ARRAY(SELECT t FROM unnest(r.times) t WHERE t > clock_timestamp() - $3 * interval '1 microsecond')) < $2
	RETURNING cardinality(times)`

// TestRateWindow_RollingUpgrade: while nodes of the previous release count writes in the same
// rows with their SQL, one key's window still takes exactly the limit (300 writes at once,
// every third the previous release's, from three nodes), and the array stays sorted.
func TestRateWindow_RollingUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("the SQL's exactness, which the plain run covers; the race step has TestAllowWriteExact")
	}
	ns := nodes(t, 3, pgstore.Options{})
	acct := account(t, ns[0], 1000)
	key, secret, err := ns[0].CreateKey(acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Go(func() {
			var ok bool
			var err error
			switch i % 3 {
			case 0: // the previous release
				var n int
				err = ns[0].Pool().QueryRow(context.Background(), previousReleaseCount, key.ID, 120, time.Minute.Microseconds()).Scan(&n)
				if ok = err == nil; errors.Is(err, pgx.ErrNoRows) { // refused: 0024 updated no row
					err = nil
				}
			case 1:
				_, ok, _, _, err = ns[1].AuthenticateWrite(secret, 120, time.Minute)
			default:
				ok, _, _, err = ns[2].AllowWrite(key.ID, 120, time.Minute)
			}
			if err != nil {
				t.Errorf("write %d: %v", i, err)
			} else if ok {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if allowed.Load() != 120 {
		t.Fatalf("%d of 300 writes allowed, want 120", allowed.Load())
	}
	times := storedWindow(t, ns[0], key.ID)
	if len(times) != 120 || !slices.IsSortedFunc(times, time.Time.Compare) {
		t.Fatalf("window of %d entries, sorted %v; want 120, sorted", len(times), slices.IsSortedFunc(times, time.Time.Compare))
	}
	if _, err := ns[0].RevokeKey(key.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, _, _, err := ns[1].AuthenticateWrite(secret, 120, time.Minute); !errors.Is(err, store.ErrUnauthorized) {
		t.Fatalf("revoked key: %v, want ErrUnauthorized", err)
	}
}
