package pgstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// TestMigrate_GatedJobMatchesJobs checks that migration 0030's convsvc_gated_job is the gate's
// four values, then every column of jobs in its order and with its type: the gated functions
// fill it with `RETURNING NULL, NULL, NULL, NULL, jobs.*`, so a column added to jobs without
// the same attribute added here would shift every value after it.
func TestMigrate_GatedJobMatchesJobs(t *testing.T) {
	s := open(t, testpg.NewDatabase(t), pgstore.Options{})
	cols := func(rel string) []string {
		t.Helper()
		var got []string
		if err := s.Pool().QueryRow(context.Background(), `SELECT array_agg(attname || ' ' || format_type(atttypid, atttypmod) ORDER BY attnum)
			FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`, rel).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := append([]string{"o_count integer", "o_oldest timestamp with time zone", "o_now timestamp with time zone", "o_notify text"}, cols("jobs")...)
	if got := cols("convsvc_gated_job"); !slices.Equal(got, want) {
		t.Fatalf("convsvc_gated_job's attributes:\n%v\nwant the gate's four, then jobs':\n%v", got, want)
	}
}

// TestGatedCall_EveryPathOfAStart runs a kept key's starts through migration 0030's one
// statement on each of its paths: the fast path (the job queued, the gate counted, another
// node's waiters woken by the payloads the statement took), a job already started (0025's
// start through the nested call: the job as it is, counted), an unknown job (refused with
// nothing kept; the write then counts once on its own, as callGated does) and a revoked key
// (refused before any transition, nothing counted).
func TestGatedCall_EveryPathOfAStart(t *testing.T) {
	url := testpg.NewDatabase(t)
	s := open(t, url, pgstore.Options{})
	other := open(t, url, pgstore.Options{})
	acct, secret := keptKey(t, s, 100)
	keyID := gate(t, s, secret, 120).Key.ID
	g := gate(t, s, secret, 120)
	job, _, err := s.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "gif", InputBytes: 10, Gate: g},
		func(store.Job) (store.Response, error) { return store.Response{Status: 201}, nil })
	if err != nil || job.Status != store.StatusCreated || !g.Ran || !g.Allowed || g.Remaining != 118 {
		t.Fatalf("gated create: %+v, %v, gate %+v", job, err, g)
	}
	changed, release := other.WaitChange(job.ID)
	defer release()
	events, releaseEvents := other.WaitEvents(acct.ID)
	defer releaseEvents()

	step := func(name string, wantCount int, wantStatus string, wantErr error) {
		t.Helper()
		g := gate(t, s, secret, 120)
		got, err := s.StartSealedJob(acct.ID, job.ID, store.Upload{Size: 10, ETag: `"e"`, Gate: g})
		if wantErr != nil {
			if !errors.Is(err, wantErr) {
				t.Fatalf("%s: %v, want %v", name, err, wantErr)
			}
		} else if err != nil || got.Status != wantStatus || got.ID != job.ID || got.Upload == nil || got.Upload.ETag != `"e"` {
			t.Fatalf("%s: %+v, %v; want the job %s", name, got, err, wantStatus)
		}
		if !g.Ran || !g.Allowed || g.Remaining != 120-wantCount {
			t.Fatalf("%s: gate %+v, want it allowed with %d left", name, g, 120-wantCount)
		}
		if n := windowCount(t, s, keyID); n != wantCount {
			t.Fatalf("%s: %d writes in the window, want %d", name, n, wantCount)
		}
	}
	step("start", 3, store.StatusQueued, nil)
	for what, ch := range map[string]<-chan struct{}{"WaitChange": changed, "WaitEvents": events} {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("the other node's %s was not woken by the gated start", what)
		}
	}
	step("start again", 4, store.StatusQueued, nil)
	job.ID = "job_unknown"
	step("start of an unknown job", 5, "", store.ErrNotFound)

	g = gate(t, s, secret, 120)
	if _, err := other.RevokeKey(g.Key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartSealedJob(acct.ID, job.ID, store.Upload{Size: 10, Gate: g}); !errors.Is(err, store.ErrUnauthorized) || !g.Unauthorized {
		t.Fatalf("start with a revoked key: %v, gate %+v", err, g)
	}
	if n := windowCount(t, s, keyID); n != 5 {
		t.Fatalf("%d writes in the window after the revoked start, want 5", n)
	}
}
