package cli

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
)

// Issue 33 item 2: the embedded server convert starts for itself (no --server) is the user's
// own process and does not rate-limit its key: 130 creates inside a minute, past the 120 a
// served key gets, are all answered 200.
func TestConvert_EmbeddedServerDoesNotRateLimit(t *testing.T) {
	o := &convertOptions{}
	stop, err := o.startEmbedded(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c := &client.Client{BaseURL: o.server, Key: o.key, Retries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i := range 130 {
		res, err := c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "jpeg", InputBytes: 10}, "")
		if err != nil {
			t.Fatalf("create %d: %v", i+1, err)
		}
		if _, err := c.CancelJob(ctx, res.Job.ID); err != nil {
			t.Fatalf("cancel %d: %v", i+1, err)
		}
	}
}
