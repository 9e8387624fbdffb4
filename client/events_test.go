package client_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// TestClient_JobEvents: JobEvents follows a job to its final event and ends; resuming from
// an event's ID yields only what followed it; Events replays the account's events after a
// Last-Event-ID; a job of another account is CodeNotFound.
func TestClient_JobEvents(t *testing.T) {
	e := testenv.Start(t)
	c := &client.Client{BaseURL: e.URL, Key: e.Key, HTTP: e.HTTP}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	job := e.Convert(e.Key, "png", "jpeg", testenv.Sample(t, "images/sample.png"))
	var types, ids []string
	for ev, err := range c.JobEvents(ctx, job.ID, client.EventsOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		types, ids = append(types, ev.Type), append(ids, ev.ID)
	}
	if strings.Join(types, " ") != "job.queued job.running job.succeeded" || ids[2] != "evt_"+job.ID+"_succeeded" {
		t.Fatalf("events %v %v", types, ids)
	}
	var rest []string
	for ev, err := range c.JobEvents(ctx, job.ID, client.EventsOptions{LastEventID: ids[0]}) {
		if err != nil {
			t.Fatal(err)
		}
		rest = append(rest, ev.ID)
	}
	if strings.Join(rest, " ") != ids[1]+" "+ids[2] {
		t.Fatalf("resumed after %s: %v", ids[0], rest)
	}
	var got []string
	for ev, err := range c.Events(ctx, client.EventsOptions{LastEventID: ids[1]}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.ID)
		break
	}
	if len(got) != 1 || got[0] != ids[2] {
		t.Fatalf("account stream after %s: %v", ids[1], got)
	}
	_, other := e.NewAccount(10)
	oc := &client.Client{BaseURL: e.URL, Key: other, HTTP: e.HTTP}
	for _, err := range oc.JobEvents(ctx, job.ID, client.EventsOptions{}) {
		if !client.IsCode(err, client.CodeNotFound) {
			t.Fatalf("another account's job: %v, want not_found", err)
		}
	}
}

// FuzzReadEvents: any body, however malformed, parses without panicking and within the
// per-event bound (a line over it is an error, not a growing buffer); seeds in
// testdata/fuzz/FuzzReadEvents.
func FuzzReadEvents(f *testing.F) {
	f.Add([]byte("retry: 2000\n\nid: evt_job_1_queued\nevent: job.queued\ndata: {\"id\":\"evt_job_1_queued\",\"type\":\"job.queued\",\"created_at\":\"2026-01-01T00:00:00Z\",\"data\":{\"job\":{\"id\":\"job_1\",\"status\":\"queued\"}}}\n\n: heartbeat\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		n := 0
		err := client.ReadEvents(bytes.NewReader(body), func(ev client.Event) error {
			n++
			return nil
		})
		if err == nil && n > len(body) {
			t.Fatalf("%d events from %d bytes", n, len(body))
		}
	})
}
