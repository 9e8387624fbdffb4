package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// waitBound is how long a test waits for something that must happen on a busy machine.
const waitBound = 30 * time.Second

// nodes opens n Stores on one fresh database, standing in for n convsvc nodes.
func nodes(t *testing.T, n int, o pgstore.Options) []*pgstore.Store {
	t.Helper()
	url := testpg.NewDatabase(t)
	out := make([]*pgstore.Store, n)
	for i := range out {
		o := o
		o.NodeID = fmt.Sprintf("node%d", i)
		out[i] = open(t, url, o)
	}
	return out
}

func account(t *testing.T, s *pgstore.Store, capCents int64) store.Account {
	t.Helper()
	acct, err := s.CreateAccount("acme", capCents)
	if err != nil {
		t.Fatal(err)
	}
	return acct
}

func queuedJob(t *testing.T, s *pgstore.Store, accountID string) store.Job {
	t.Helper()
	job, _, err := s.CreateJob(store.CreateJobParams{AccountID: accountID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1},
		func(store.Job) (store.Response, error) { return store.Response{Status: 201}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if job, err = s.StartJob(accountID, job.ID, 1); err != nil {
		t.Fatal(err)
	}
	return job
}

func ledger(t *testing.T, s *pgstore.Store, accountID string, wantReserved, wantSpent int64) {
	t.Helper()
	acct, err := s.Account(accountID)
	if err != nil {
		t.Fatal(err)
	}
	var spent int64
	for _, n := range acct.MonthlySpend {
		spent += n
	}
	if acct.ReservedCents != wantReserved || spent != wantSpent {
		t.Fatalf("reserved %d, spent %d; want %d and %d", acct.ReservedCents, spent, wantReserved, wantSpent)
	}
	if err := s.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenConcurrent: nodes starting together on an empty database all open it, and each
// migration is applied once.
func TestOpenConcurrent(t *testing.T) {
	url := testpg.NewDatabase(t)
	const n = 8
	var wg sync.WaitGroup
	stores := make([]*pgstore.Store, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			stores[i], errs[i] = pgstore.Open(ctx, url, pgstore.Options{MaxConns: 2})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	var versions []int
	rows, err := stores[0].Pool().Query(context.Background(), `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if want := embeddedMigrations(t); rows.Err() != nil || !slices.Equal(versions, want) {
		t.Fatalf("schema_migrations %v, %v; want %v", versions, rows.Err(), want)
	}
	// Every node works on the one schema.
	acct := account(t, stores[3], 10)
	if _, err := stores[7].Account(acct.ID); err != nil {
		t.Fatal(err)
	}
	// Opening an up-to-date database again applies nothing.
	open(t, url, pgstore.Options{})
}

// TestOpenUnavailable: a database that cannot be reached is ErrUnavailable, for a 503.
func TestOpenUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := pgstore.Open(ctx, "postgres://postgres@127.0.0.1:1/convsvc?sslmode=disable&connect_timeout=5", pgstore.Options{})
	if !errors.Is(err, pgstore.ErrUnavailable) {
		t.Fatalf("open an unreachable database: %v, want ErrUnavailable", err)
	}
}

// TestLeaseReapedAndStaleFinishRefused: a node that stops heartbeating loses its job to
// another node's reaper; its late heartbeat and finish are refused, and the job runs again.
func TestLeaseReapedAndStaleFinishRefused(t *testing.T) {
	ns := nodes(t, 2, pgstore.Options{Lease: time.Second})
	a, b := ns[0], ns[1]
	acct := account(t, a, 10)
	job := queuedJob(t, a, acct.ID)
	claimed, ok, err := a.ClaimJob()
	if err != nil || !ok || claimed.ID != job.ID || claimed.Attempt != 1 {
		t.Fatalf("claim: %+v %v %v", claimed, ok, err)
	}
	var owner string
	if err := a.Pool().QueryRow(context.Background(), `SELECT lease_owner FROM jobs WHERE id = $1`, job.ID).Scan(&owner); err != nil || owner != "node0" {
		t.Fatalf("lease owner %q, %v", owner, err)
	}
	// Another node's heartbeat for the job is refused: the lease is node0's.
	if mine, err := b.Heartbeat(job.ID, 1); err != nil || mine {
		t.Fatalf("heartbeat from another node = %v, %v", mine, err)
	}
	var requeued []string
	deadline := time.Now().Add(waitBound)
	for len(requeued) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("lease of 1s not reaped within %v", waitBound)
		}
		time.Sleep(100 * time.Millisecond)
		var failed []string
		if requeued, failed, err = b.ReapExpiredLeases(3); err != nil || len(failed) != 0 {
			t.Fatalf("reap: %v %v", failed, err)
		}
	}
	if !slices.Equal(requeued, []string{job.ID}) {
		t.Fatalf("requeued %v", requeued)
	}
	if got, err := b.Job(acct.ID, job.ID); err != nil || got.Status != store.StatusQueued || got.Attempt != 1 || !got.StartedAt.Equal(*job.StartedAt) {
		t.Fatalf("requeued job %+v, %v", got, err)
	}
	// The requeue is an event of the account's log, after the claim's.
	if evs, err := b.EventsAfter(acct.ID, 0, job.ID, 10); err != nil || len(evs) != 3 || evs[2].ID != "evt_"+job.ID+"_queued_1" || evs[2].Type != "job.queued" {
		t.Fatalf("events of the reaped job: %+v, %v", evs, err)
	}
	ledger(t, a, acct.ID, 1, 0)
	if mine, err := a.Heartbeat(job.ID, 1); err != nil || mine {
		t.Fatalf("heartbeat after the lease was reaped = %v, %v", mine, err)
	}
	again, ok, err := b.ClaimJob()
	if err != nil || !ok || again.ID != job.ID || again.Attempt != 2 {
		t.Fatalf("second claim %+v %v %v", again, ok, err)
	}
	_, err = a.FinishJob(job.ID, 1, store.Outcome{Output: &store.Output{Bytes: 1, SHA256: "x"}})
	if !errors.Is(err, store.ErrInvalidState) {
		t.Fatalf("stale finish: %v, want ErrInvalidState", err)
	}
	if mine, err := b.Heartbeat(job.ID, 2); err != nil || !mine {
		t.Fatalf("heartbeat of the new attempt = %v, %v", mine, err)
	}
	done, err := b.FinishJob(job.ID, 2, store.Outcome{Output: &store.Output{Bytes: 1, SHA256: "y"}})
	if err != nil || done.Status != store.StatusSucceeded || done.Output.SHA256 != "y" {
		t.Fatalf("finish attempt 2: %+v %v", done, err)
	}
	ledger(t, a, acct.ID, 0, 1)
}

// TestHeartbeatRenewsLease: a heartbeat moves the lease's expiry to the database's clock plus
// the lease; a cancelled job's heartbeat answers false.
func TestHeartbeatRenewsLease(t *testing.T) {
	s := nodes(t, 1, pgstore.Options{Lease: 10 * time.Minute})[0]
	acct := account(t, s, 10)
	job := queuedJob(t, s, acct.ID)
	if _, ok, err := s.ClaimJob(); err != nil || !ok {
		t.Fatal(ok, err)
	}
	ctx := context.Background()
	if _, err := s.Pool().Exec(ctx, `UPDATE jobs SET lease_expires_at = clock_timestamp() + interval '1 minute' WHERE id = $1`, job.ID); err != nil {
		t.Fatal(err)
	}
	if mine, err := s.Heartbeat(job.ID, 1); err != nil || !mine {
		t.Fatalf("heartbeat = %v, %v", mine, err)
	}
	var seconds float64
	if err := s.Pool().QueryRow(ctx, `SELECT extract(epoch FROM lease_expires_at - clock_timestamp())::float8 FROM jobs WHERE id = $1`, job.ID).Scan(&seconds); err != nil {
		t.Fatal(err)
	}
	left := time.Duration(seconds * float64(time.Second))
	if left <= 5*time.Minute || left > 10*time.Minute {
		t.Fatalf("lease has %v left after a heartbeat, want about 10m", left)
	}
	if _, err := s.CancelJob(acct.ID, job.ID); err != nil {
		t.Fatal(err)
	}
	if mine, err := s.Heartbeat(job.ID, 1); err != nil || mine {
		t.Fatalf("heartbeat of a cancelled job = %v, %v", mine, err)
	}
	ledger(t, s, acct.ID, 0, 0)
}

// TestReapExhausted: at --max-attempts a lapsed lease fails the job expired_or_exhausted and
// releases its cent.
func TestReapExhausted(t *testing.T) {
	s := nodes(t, 1, pgstore.Options{Lease: time.Second})[0]
	acct := account(t, s, 10)
	job := queuedJob(t, s, acct.ID)
	if _, ok, err := s.ClaimJob(); err != nil || !ok {
		t.Fatal(ok, err)
	}
	var failed []string
	deadline := time.Now().Add(waitBound)
	for len(failed) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("lease of 1s not reaped within %v", waitBound)
		}
		time.Sleep(100 * time.Millisecond)
		var requeued []string
		var err error
		if requeued, failed, err = s.ReapExpiredLeases(1); err != nil || len(requeued) != 0 {
			t.Fatalf("reap: %v %v", requeued, err)
		}
	}
	got, err := s.Job(acct.ID, job.ID)
	if err != nil || !slices.Equal(failed, []string{job.ID}) || got.Status != store.StatusFailed ||
		got.ErrorCode != store.CodeExpiredOrExhausted || got.ErrorMessage != "the conversion was interrupted 1 times (--max-attempts 1)" || got.FinishedAt == nil {
		t.Fatalf("failed %v; job %+v, %v", failed, got, err)
	}
	if evs, err := s.EventsAfter(acct.ID, 0, job.ID, 10); err != nil || len(evs) != 3 || evs[2].ID != store.WebhookEventID(job.ID, store.StatusFailed) {
		t.Fatalf("events of the exhausted job: %+v, %v", evs, err)
	}
	ledger(t, s, acct.ID, 0, 0)
}

// TestNotifyAcrossNodes: a change made on one node wakes WaitChange and Subscribe on another.
func TestNotifyAcrossNodes(t *testing.T) {
	ns := nodes(t, 2, pgstore.Options{})
	a, b := ns[0], ns[1]
	acct := account(t, a, 10)
	events := make(chan pgstore.Event, 16)
	unsubscribe := a.Subscribe(func(ev pgstore.Event) { events <- ev })
	defer unsubscribe()
	job, _, err := b.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1},
		func(store.Job) (store.Response, error) { return store.Response{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	wake, release := a.WaitChange(job.ID)
	defer release()
	if _, err := b.StartJob(acct.ID, job.ID, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(waitBound):
		t.Fatal("a start on node 1 did not wake WaitChange on node 0")
	}
	want := func(kind pgstore.EventKind) {
		t.Helper()
		select {
		case ev := <-events:
			if ev.Kind != kind || ev.JobID != job.ID {
				t.Fatalf("event %+v, want kind %d for %s", ev, kind, job.ID)
			}
		case <-time.After(waitBound):
			t.Fatalf("no event of kind %d within %v", kind, waitBound)
		}
	}
	want(pgstore.EventJobQueued)
	wake, release2 := a.WaitChange(job.ID)
	defer release2()
	if _, err := b.CancelJob(acct.ID, job.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(waitBound):
		t.Fatal("a cancel on node 1 did not wake WaitChange on node 0")
	}
	want(pgstore.EventJobCancelled)
}

// TestListenerReconnectWakesAll: when the listening connection drops, the Store reconnects
// and wakes every waiter (notifications sent meanwhile are lost), then hears changes again.
func TestListenerReconnectWakesAll(t *testing.T) {
	ns := nodes(t, 2, pgstore.Options{})
	a, b := ns[0], ns[1]
	acct := account(t, a, 10)
	job := queuedJob(t, a, acct.ID)
	events := make(chan pgstore.Event, 16)
	defer a.Subscribe(func(ev pgstore.Event) { events <- ev })()
	wake, release := a.WaitChange(job.ID)
	defer release()
	pid := a.ListenerPID()
	if pid == 0 {
		t.Fatal("no listener connection")
	}
	var killed bool
	if err := b.Pool().QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, int32(pid)).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminate listener %d: %v %v", pid, killed, err)
	}
	select {
	case <-wake:
	case <-time.After(waitBound):
		t.Fatal("a reconnect did not wake the waiter")
	}
	for resynced := false; !resynced; {
		select {
		case ev := <-events:
			resynced = ev.Kind == pgstore.EventResync // the start's EventJobQueued may come first
		case <-time.After(waitBound):
			t.Fatal("no EventResync after the reconnect")
		}
	}
	if p := a.ListenerPID(); p == 0 || p == pid {
		t.Fatalf("listener pid %d after the reconnect (was %d)", p, pid)
	}
	wake, release2 := a.WaitChange(job.ID)
	defer release2()
	if _, err := b.CancelJob(acct.ID, job.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(waitBound):
		t.Fatal("no notification after the reconnect")
	}
}

// TestAllowWriteExact: 300 concurrent writes for one key from three nodes, 120 per minute:
// exactly 120 pass. A short window opens again once its oldest write leaves it.
func TestAllowWriteExact(t *testing.T) {
	ns := nodes(t, 3, pgstore.Options{})
	var allowed, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Go(func() {
			ok, remaining, reset, err := ns[i%3].AllowWrite("key_a", 120, time.Minute)
			switch {
			case err != nil:
				t.Errorf("AllowWrite: %v", err)
			case ok:
				allowed.Add(1)
				if remaining < 0 || remaining > 119 || reset <= 0 || reset > time.Minute {
					t.Errorf("allowed with remaining %d, reset %v", remaining, reset)
				}
			default:
				refused.Add(1)
				if remaining != 0 || reset <= 0 || reset > time.Minute {
					t.Errorf("refused with remaining %d, reset %v", remaining, reset)
				}
			}
		})
	}
	wg.Wait()
	if allowed.Load() != 120 || refused.Load() != 180 {
		t.Fatalf("allowed %d, refused %d; want 120 and 180", allowed.Load(), refused.Load())
	}
	// Another key has its own window.
	if ok, remaining, _, err := ns[1].AllowWrite("key_b", 120, time.Minute); err != nil || !ok || remaining != 119 {
		t.Fatalf("another key: %v %d %v", ok, remaining, err)
	}
	s := ns[0]
	for i, want := range []bool{true, true, false} {
		ok, _, _, err := s.AllowWrite("key_c", 2, time.Second)
		if err != nil || ok != want {
			t.Fatalf("write %d in a 2 per second window: %v %v, want %v", i+1, ok, err, want)
		}
	}
	// key_c's window is busy (it refused a write just now); key_a's minute-long one too.
	if n, err := s.PurgeRateWindows(time.Minute); err != nil || n != 0 {
		t.Fatalf("purge busy windows: %d, %v", n, err)
	}
	deadline := time.Now().Add(waitBound)
	for {
		ok, _, _, err := s.AllowWrite("key_c", 2, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the 1s window did not open again")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Once a key's last write is older than the window, its row goes: key_a, key_b and key_c
	// (which wrote just now) all go within a few seconds, each exactly once.
	deadline = time.Now().Add(waitBound)
	purged := 0
	for purged < 3 {
		n, err := s.PurgeRateWindows(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		purged += n
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 idle windows purged within %v", purged, waitBound)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var left int
	if err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM rate_windows`).Scan(&left); err != nil || purged != 3 || left != 0 {
		t.Fatalf("purged %d windows, %d left, %v; want 3 and 0", purged, left, err)
	}
}

// TestSpendCapAcrossNodes: creates for one account spread over three nodes accept exactly
// the cap, also while successes move reserved cents to spend at the same time.
func TestSpendCapAcrossNodes(t *testing.T) {
	ns := nodes(t, 3, pgstore.Options{})
	const capCents = 30
	acct := account(t, ns[0], capCents)
	create := func(i int) error {
		_, _, err := ns[i%3].CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1},
			func(store.Job) (store.Response, error) { return store.Response{}, nil })
		return err
	}
	// Fill the cap with running jobs.
	var running []store.Job
	for i := range capCents {
		job, _, err := ns[i%3].CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 1},
			func(store.Job) (store.Response, error) { return store.Response{}, nil })
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ns[0].StartJob(acct.ID, job.ID, 1); err != nil {
			t.Fatal(err)
		}
		claimed, ok, err := ns[i%3].ClaimJob()
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		running = append(running, claimed)
	}
	// Every success keeps spent + reserved at the cap: no create may pass meanwhile.
	var accepted atomic.Int64
	var wg sync.WaitGroup
	for i, job := range running {
		wg.Go(func() {
			if _, err := ns[(i+1)%3].FinishJob(job.ID, job.Attempt, store.Outcome{Output: &store.Output{Bytes: 1, SHA256: "x"}}); err != nil {
				t.Errorf("finish: %v", err)
			}
		})
	}
	for i := range 100 {
		wg.Go(func() {
			if err := create(i); err == nil {
				accepted.Add(1)
			} else if !errors.Is(err, store.ErrLimitReached) {
				t.Errorf("create: %v", err)
			}
		})
	}
	wg.Wait()
	if accepted.Load() != 0 {
		t.Fatalf("%d creates accepted while the month's spend and reservations were at the cap", accepted.Load())
	}
	ledger(t, ns[0], acct.ID, 0, capCents)
	// Raise the cap by 25: of 200 concurrent creates over three nodes exactly 25 pass.
	newCap := int64(capCents + 25)
	if _, err := ns[2].UpdateAccount(acct.ID, nil, &newCap); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		wg.Go(func() {
			if err := create(i); err == nil {
				accepted.Add(1)
			} else if !errors.Is(err, store.ErrLimitReached) {
				t.Errorf("create: %v", err)
			}
		})
	}
	wg.Wait()
	if accepted.Load() != 25 {
		t.Fatalf("%d of 200 creates accepted under 25 cents of room, want 25", accepted.Load())
	}
	ledger(t, ns[1], acct.ID, 25, capCents)
}

// TestRevokeAcrossNodes: a key revoked on one node is refused by every node at once.
func TestRevokeAcrossNodes(t *testing.T) {
	ns := nodes(t, 2, pgstore.Options{})
	acct := account(t, ns[0], 10)
	key, secret, err := ns[0].CreateKey(acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ns[1].Authenticate(secret); err != nil {
		t.Fatal(err)
	}
	if _, err := ns[0].RevokeKey(key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := ns[1].Authenticate(secret); !errors.Is(err, store.ErrUnauthorized) {
		t.Fatalf("revoked key on another node: %v", err)
	}
	var stored []byte
	if err := ns[0].Pool().QueryRow(context.Background(), `SELECT hash FROM api_keys WHERE id = $1`, key.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if h := store.HashKey(secret); string(stored) != string(h[:]) {
		t.Fatal("the database holds something other than the key's SHA-256")
	}
}

// TestErrorsWrapped: a failure of the database is ErrUnavailable; the caller's errors stay
// the store's sentinels.
func TestErrorsWrapped(t *testing.T) {
	url := testpg.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := pgstore.Open(ctx, url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Account("acct_nosuchaccount"); !errors.Is(err, store.ErrNotFound) || errors.Is(err, pgstore.ErrUnavailable) {
		t.Fatalf("unknown account: %v", err)
	}
	if _, err := s.Backup(nil, nil); !errors.Is(err, pgstore.ErrNotSupported) {
		t.Fatalf("backup: %v", err)
	}
	s.Close()
	if _, err := s.CreateAccount("acme", 1); !errors.Is(err, pgstore.ErrUnavailable) {
		t.Fatalf("create account on a closed pool: %v, want ErrUnavailable", err)
	}
	if err := s.Ping(); !errors.Is(err, pgstore.ErrUnavailable) {
		t.Fatalf("ping on a closed pool: %v, want ErrUnavailable", err)
	}
}

// embeddedMigrations lists the version numbers of the migration files, in order: each is
// applied once, whatever their gaps.
func embeddedMigrations(t *testing.T) []int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations: %v, %v", files, err)
	}
	var versions []int
	for _, f := range files {
		v, err := strconv.Atoi(strings.SplitN(filepath.Base(f), "_", 2)[0])
		if err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	slices.Sort(versions)
	return versions
}

// hookLog records a node's FinishHook calls and the job's upload state read from inside each.
type hookLog struct {
	mu     sync.Mutex
	s      *pgstore.Store
	jobs   []store.Job
	states []store.UploadState
}

func (h *hookLog) hook(j store.Job) {
	h.mu.Lock()
	s := h.s
	h.mu.Unlock()
	st, err := s.JobUploadState(j.ID)
	if err != nil {
		st = store.UploadState(-1)
	}
	h.mu.Lock()
	h.jobs, h.states = append(h.jobs, j), append(h.states, st)
	h.mu.Unlock()
}

func (h *hookLog) take() ([]store.Job, []store.UploadState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	j, s := h.jobs, h.states
	h.jobs, h.states = nil, nil
	return j, s
}

// TestReapFinishHook: a reaper that fails jobs whose lease lapsed at --max-attempts calls its
// own node's FinishHook once per failed job, after the commit; requeued jobs call none, and
// another node's hook is not called for them.
func TestReapFinishHook(t *testing.T) {
	url := testpg.NewDatabase(t)
	logs := []*hookLog{{}, {}}
	var ns []*pgstore.Store
	for i, l := range logs {
		s := open(t, url, pgstore.Options{Lease: time.Second, NodeID: fmt.Sprintf("node%d", i), OnFinished: l.hook})
		l.mu.Lock()
		l.s = s
		l.mu.Unlock()
		ns = append(ns, s)
	}
	reaper, worker := ns[0], ns[1]
	acct := account(t, reaper, 10)
	a := queuedJob(t, worker, acct.ID)
	b := queuedJob(t, worker, acct.ID)
	claim := func() {
		t.Helper()
		if _, ok, err := worker.ClaimJob(); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	// reap waits for the leases to lapse and reaps until every running job is requeued or failed.
	reap := func(maxAttempts, want int) (requeued, failed []string) {
		t.Helper()
		deadline := time.Now().Add(waitBound)
		for len(requeued)+len(failed) < want {
			if time.Now().After(deadline) {
				t.Fatalf("leases of 1s not reaped within %v", waitBound)
			}
			time.Sleep(100 * time.Millisecond)
			r, f, err := reaper.ReapExpiredLeases(maxAttempts)
			if err != nil {
				t.Fatal(err)
			}
			requeued, failed = append(requeued, r...), append(failed, f...)
		}
		return requeued, failed
	}
	claim() // a attempt 1
	claim() // b attempt 1
	if requeued, _ := reap(2, 2); len(requeued) != 2 {
		t.Fatalf("requeued %v, want both", requeued)
	}
	for i, l := range logs {
		if jobs, _ := l.take(); len(jobs) != 0 {
			t.Fatalf("node %d's hook called for requeued jobs: %v", i, jobs)
		}
	}
	claim() // a attempt 2
	claim() // b attempt 2
	_, failed := reap(2, 2)
	slices.Sort(failed)
	want := []string{a.ID, b.ID}
	slices.Sort(want)
	if !slices.Equal(failed, want) {
		t.Fatalf("failed %v, want %v", failed, want)
	}
	jobs, states := logs[0].take()
	var got []string
	for i, j := range jobs {
		if j.Status != store.StatusFailed || j.ErrorCode != store.CodeExpiredOrExhausted || j.FinishedAt == nil || states[i] != store.UploadClosed {
			t.Fatalf("hook call %d: job %+v, upload state inside the hook %v", i, j, states[i])
		}
		got = append(got, j.ID)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the reaper's hook saw %v, want each of %v once", got, want)
	}
	if jobs, _ := logs[1].take(); len(jobs) != 0 {
		t.Fatalf("the other node's hook was called for %d jobs", len(jobs))
	}
	ledger(t, reaper, acct.ID, 0, 0)
}
