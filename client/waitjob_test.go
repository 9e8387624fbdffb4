package client_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// TestClient_WaitJobSeesEveryMove: against a real service, WaitJob's onChange sees the job
// running before it sees it done (changed_from), not only the final state.
func TestClient_WaitJobSeesEveryMove(t *testing.T) {
	e := testenv.Start(t, func(c *service.Config) { c.Workers = 1 })
	c := &client.Client{BaseURL: e.URL, Key: e.Key, HTTP: e.HTTP}
	data := testenv.NoisePNG(t, 3000, 2000) // converts to GIF for seconds
	res := e.Create(e.Key, "png", "gif", int64(len(data)))
	testenv.MustStatus(t, e.Upload(res.UploadURL, data), 200, "")
	testenv.MustStatus(t, e.Start(e.Key, res.Job.ID), 200, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var seen []string
	job, err := c.WaitJob(ctx, res.Job.ID, func(j client.Job) { seen = append(seen, string(j.Status)) })
	if err != nil {
		t.Fatal(err)
	}
	if job.Status != "succeeded" || len(seen) < 2 || !slices.Contains(seen, "running") || seen[len(seen)-1] != "succeeded" {
		t.Fatalf("job %s, onChange saw %v; want running then succeeded", job.Status, seen)
	}
}
