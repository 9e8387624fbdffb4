package store

import "testing"

// JobUploadState is what the blob store asks before and after every PUT: only a created,
// unexpired job takes an upload; a started one is sealed; a finished one (also cancelled
// before it started) or an expired one is closed; an unknown
// one is gone.
func TestStore_JobUploadState(t *testing.T) {
	clk := newClock()
	s := mustOpen(t, clk)
	a := mustAccount(t, s, 10)
	check := func(what, id string, want UploadState) {
		t.Helper()
		if got, err := s.JobUploadState(id); err != nil || got != want {
			t.Fatalf("%s: JobUploadState = %v, %v; want %v", what, got, err, want)
		}
	}
	check("unknown job", "job_nosuchjob", UploadGone)
	created := mustCreate(t, s, a.ID, 100)
	check("created job", created.ID, UploadOpen)
	cancelled := mustCreate(t, s, a.ID, 100)
	if _, err := s.CancelJob(a.ID, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	check("job cancelled before starting", cancelled.ID, UploadClosed)
	mismatch := mustCreate(t, s, a.ID, 100)
	if _, err := s.StartJob(a.ID, mismatch.ID, 99); err == nil {
		t.Fatal("no size mismatch")
	}
	check("job cancelled for its size", mismatch.ID, UploadClosed)
	if _, err := s.StartJob(a.ID, created.ID, 100); err != nil {
		t.Fatal(err)
	}
	check("started job", created.ID, UploadSealed)
	job, ok, err := s.ClaimJob()
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	check("running job", job.ID, UploadSealed)
	if _, err := s.FinishJob(job.ID, job.Attempt, Outcome{Output: &Output{Bytes: 1, SHA256: "00"}}); err != nil {
		t.Fatal(err)
	}
	check("succeeded job", job.ID, UploadClosed)

	late := mustCreate(t, s, a.ID, 100)
	check("created job", late.ID, UploadOpen)
	clk.t.Store(late.ExpiresAt.UnixNano())
	check("job at expires_at, not yet swept", late.ID, UploadClosed)
}
