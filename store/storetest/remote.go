package storetest

import (
	"errors"
	"maps"
	"testing"

	"github.com/convsvc/convsvc/store"
)

// remoteCases cover jobs with remote files (create's source_url and deliver_to).
var remoteCases = []testCase{
	{"RemoteJobQueuedAtCreate", testRemoteJobQueued},
}

func init() { cases = append(cases, remoteCases...) }

// testRemoteJobQueued: a job created with a source_url is queued in the create's transaction
// (started_at set, the cent reserved), claimable at once, and keeps its source_url, its
// input_bytes (the fetch's bound) and deliver_to through claim and failure; a plain job keeps
// neither, and input_bytes 0 is refused beside a source_url too.
func testRemoteJobQueued(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 10)
	deliver := &store.Delivery{URL: "https://bucket.example/out.jpg?X-Amz-Signature=abc", Headers: map[string]string{"Content-Type": "image/jpeg"}}
	job, _, err := f.s.CreateJob(store.CreateJobParams{AccountID: f.acct.ID, InputFormat: "png", TargetFormat: "jpg",
		InputBytes: store.MaxInputBytes, SourceURL: "https://cdn.example/a.png?token=t", DeliverTo: deliver}, plainRender)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, j store.Job, status string) {
		t.Helper()
		if j.Status != status || j.StartedAt == nil || j.InputBytes != store.MaxInputBytes || j.SourceURL != "https://cdn.example/a.png?token=t" ||
			j.DeliverTo == nil || j.DeliverTo.URL != deliver.URL || !maps.Equal(j.DeliverTo.Headers, deliver.Headers) {
			t.Fatalf("%s: %+v (deliver_to %+v), want %s with the source and the delivery", what, j, j.DeliverTo, status)
		}
	}
	check("created", job, store.StatusQueued)
	check("read", f.get(job.ID), store.StatusQueued)
	f.checkLedger(1, 0)
	if st, err := f.s.JobUploadState(job.ID); err != nil || st != store.UploadSealed {
		t.Fatalf("upload state of a source_url job: %v %v, want sealed (no PUT may land)", st, err)
	}
	sized, _, err := f.s.CreateJob(store.CreateJobParams{AccountID: f.acct.ID, InputFormat: "png", TargetFormat: "jpg",
		InputBytes: 500, SourceURL: "https://cdn.example/b.png"}, plainRender)
	if err != nil || sized.Status != store.StatusQueued || sized.InputBytes != 500 || sized.DeliverTo != nil {
		t.Fatalf("source_url with input_bytes: %+v %v", sized, err)
	}
	claimed := f.claim()
	check("claimed", claimed, store.StatusRunning)
	failed, err := f.s.FinishJob(claimed.ID, claimed.Attempt, store.Outcome{ErrorCode: store.CodeConversionFailed, ErrorReason: "source_unreachable", ErrorMessage: "answered 404"})
	if err != nil {
		t.Fatal(err)
	}
	check("failed", failed, store.StatusFailed)
	if failed.ErrorReason != "source_unreachable" {
		t.Fatalf("error_reason %q", failed.ErrorReason)
	}
	f.checkLedger(1, 0)
	if second := f.claim(); second.ID != sized.ID {
		t.Fatalf("claimed %s, want %s", second.ID, sized.ID)
	}
	plain := f.create(10)
	if plain.SourceURL != "" || plain.DeliverTo != nil || plain.Status != store.StatusCreated {
		t.Fatalf("plain job: %+v", plain)
	}
	if _, _, err := f.s.CreateJob(store.CreateJobParams{AccountID: f.acct.ID, InputFormat: "png", TargetFormat: "jpg", SourceURL: "https://cdn.example/c.png"}, plainRender); !errors.Is(err, store.ErrInvalidArgument) {
		t.Fatalf("input_bytes 0 beside a source_url: %v, want ErrInvalidArgument", err)
	}
}
