package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/httpapi"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// TestShared_EventStreamOnAnotherNode: two services on one PostgreSQL database. A stream of
// the account opened on node B (the Go client's Events) gets the events of a job created and
// cancelled through node A, as they happen.
func TestShared_EventStreamOnAnotherNode(t *testing.T) {
	a := testenv.Start(t, testenv.Postgres(t))
	b := testenv.Start(t, func(c *service.Config) {
		c.Database, c.AdminToken = a.Cfg.Database, a.AdminToken
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan client.Event, 16)
	go func() {
		defer close(events)
		cb := &client.Client{BaseURL: b.URL, Key: a.Key}
		for ev, err := range cb.Events(ctx, client.EventsOptions{}) {
			if err != nil {
				return
			}
			events <- ev
		}
	}()
	api := b.Main.Handler().(*httpapi.Server)
	deadline := time.Now().Add(testenv.Scale(30 * time.Second))
	for api.Streams() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the stream never opened on node B")
		}
		time.Sleep(10 * time.Millisecond)
	}
	res := a.Create(a.Key, "png", "jpeg", 10)
	testenv.MustStatus(t, a.Do("POST", "/v1/jobs/"+res.Job.ID+"/cancel", a.Key, nil), 200, "")
	select {
	case ev := <-events:
		if ev.Type != client.EventJobCancelled || ev.Job == nil || ev.Job.ID != res.Job.ID || ev.ID != "evt_"+res.Job.ID+"_cancelled" {
			t.Fatalf("node B's stream got %+v, want the cancel of %s", ev, res.Job.ID)
		}
	case <-time.After(testenv.Scale(30 * time.Second)):
		t.Fatal("node B's stream got nothing of the cancel on node A")
	}
}
