package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/testproc"
)

// TestWebhooks_SIGKILLLosesNothing: jobs change state, their events are recorded, and the
// server is SIGKILLed while their deliveries hang at the receiver (sent, never answered). The
// server restarted on the same data dir delivers every event: none is lost, none is invented,
// and the ones the receiver saw twice carry the same event id and body.
func TestWebhooks_SIGKILLLosesNothing(t *testing.T) {
	data := t.TempDir()
	p := testproc.Serve(t, binary, data, "--workers", "1", "--webhook-allow-private")
	token, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admin := &client.Client{BaseURL: p.URL, Key: strings.TrimSpace(string(token))}
	acct, err := admin.CreateAccount(ctx, "hooks", 100)
	if err != nil {
		t.Fatal(err)
	}
	key, err := admin.CreateKey(ctx, acct.ID)
	if err != nil {
		t.Fatal(err)
	}

	// The receiver verifies each request; while hang is open it holds every answer.
	type got struct {
		id, typ string
		body    string
	}
	var mu sync.Mutex
	var received []got
	var answered []got // requests answered 2xx
	hang := make(chan struct{})
	var hanging sync.Once
	arrived := make(chan struct{}, 1000)
	var secret string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		s := secret
		mu.Unlock()
		ev, err := client.ReadWebhook(r, s)
		if err != nil {
			t.Errorf("delivery does not verify: %v", err)
			w.WriteHeader(400)
			return
		}
		g := got{id: ev.ID, typ: ev.Type, body: ev.Data.Job.ID + " " + string(ev.Data.Job.Status)}
		if r.Header.Get(client.WebhookEventIDHeader) != ev.ID {
			t.Errorf("event id header %q, body %q", r.Header.Get(client.WebhookEventIDHeader), ev.ID)
		}
		mu.Lock()
		received = append(received, g)
		mu.Unlock()
		arrived <- struct{}{}
		select {
		case <-hang:
		case <-r.Context().Done():
			return // the sender died
		}
		mu.Lock()
		answered = append(answered, g)
		mu.Unlock()
		w.WriteHeader(204)
	}))
	t.Cleanup(func() {
		hanging.Do(func() { close(hang) })
		recv.Close()
	})
	ep, err := admin.CreateWebhook(ctx, acct.ID, recv.URL+"/hook")
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	secret = ep.Secret
	mu.Unlock()

	// One job converts, four are cancelled: five events recorded with their state changes.
	c := &client.Client{BaseURL: p.URL, Key: key.Key}
	png := testenv.Sample(t, "images/sample.png")
	want := map[string]string{} // event id -> "job status"
	done := mustSubmit(t, c, "png", "jpeg", png)
	if j := waitStatus(t, c, done, "succeeded"); j.Status != "succeeded" {
		t.Fatalf("job %+v", j)
	}
	want["evt_"+done+"_succeeded"] = done + " succeeded"
	for range 4 {
		res, err := c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "jpeg", InputBytes: 10}, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CancelJob(ctx, res.Job.ID); err != nil {
			t.Fatal(err)
		}
		want["evt_"+res.Job.ID+"_cancelled"] = res.Job.ID + " cancelled"
	}
	// Kill while deliveries are in flight: sent, not answered, so not recorded as delivered.
	select {
	case <-arrived:
	case <-time.After(testenv.Scale(60 * time.Second)):
		t.Fatal("no delivery reached the receiver")
	}
	p.Kill()
	<-p.Done()
	mu.Lock()
	if len(answered) != 0 {
		t.Fatalf("answered before the kill: %v", answered)
	}
	before := len(received)
	sentBefore := map[string]bool{}
	for _, g := range received {
		sentBefore[g.id] = true
	}
	mu.Unlock()
	hanging.Do(func() { close(hang) }) // from now on the receiver answers 204

	p = testproc.Serve(t, binary, data, "--workers", "1", "--webhook-allow-private")
	admin.BaseURL = p.URL
	deadline := time.Now().Add(testenv.Scale(90 * time.Second))
	for {
		ds, err := admin.WebhookDeliveries(ctx, acct.ID, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		delivered := 0
		for _, d := range ds {
			if _, ok := want[d.EventID]; !ok {
				t.Fatalf("delivery of an event that did not happen: %+v", d)
			}
			if d.State == "delivered" {
				delivered++
			}
		}
		if len(ds) == len(want) && delivered == len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart %d of %d deliveries delivered: %+v", delivered, len(want), ds)
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]int{}
	for _, g := range answered {
		if want[g.id] != g.body || "job."+strings.Fields(g.body)[1] != g.typ {
			t.Fatalf("answered event %+v, want %q", g, want[g.id])
		}
		seen[g.id]++
	}
	if len(seen) != len(want) {
		t.Fatalf("events answered after the restart: %v, want %v", seen, want)
	}
	dups := 0
	for _, g := range received {
		if want[g.id] != g.body {
			t.Fatalf("received event %+v, want %q", g, want[g.id])
		}
	}
	dups = len(received) - len(want)
	t.Logf("at the kill %d requests were in flight and %d of %d events were recorded but not sent yet; %d requests in all: %d duplicates, each with its event's id",
		before, len(want)-len(sentBefore), len(want), len(received), dups)
	if before > 0 && dups < 1 {
		t.Fatalf("the %d requests in flight at the kill were not sent again", before)
	}
}
