package store

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestWebhookQueue_MovesTheOldDueIndex: a file whose pending deliveries are in the due index of
// before the per-account queue (one of them claimed when the process stopped) is moved on first
// use: the claimed one is released at start-up, both are claimed with their destinations, and
// the old bucket is gone.
func TestWebhookQueue_MovesTheOldDueIndex(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "convsvc.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	acct, err := s.CreateAccount("old", 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateWebhookEndpoint(acct.ID, "https://Hooks.Example.com/in", "whsec_x"); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 2 {
		job, _, err := s.CreateJob(CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 1},
			func(Job) (Response, error) { return Response{}, nil })
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CancelJob(acct.ID, job.ID); err != nil {
			t.Fatal(err)
		}
	}
	// Back to the old layout: webhook_due (time, id), no destination, no queue, one claimed.
	err = s.db.Update(func(tx *bolt.Tx) error {
		old, err := tx.CreateBucket(bucketWebhookDue)
		if err != nil {
			return err
		}
		var ds []WebhookDelivery
		if err := tx.Bucket(bucketWebhookDeliveries).ForEach(func(k, v []byte) error {
			var d WebhookDelivery
			if err := getJSON(tx.Bucket(bucketWebhookDeliveries), k, &d); err != nil {
				return err
			}
			ds = append(ds, d)
			return nil
		}); err != nil {
			return err
		}
		for i, d := range ds {
			d.Destination = ""
			if i == 0 {
				d.Claimed, d.Attempts, d.NextAttemptAt = true, 1, time.Now().Add(time.Hour)
			}
			ids = append(ids, d.ID)
			if err := putDelivery(tx, d); err != nil {
				return err
			}
			if err := old.Put(timeKey(d.NextAttemptAt, d.ID), nil); err != nil {
				return err
			}
		}
		for _, name := range [][]byte{bucketWebhookQueue, bucketWebhookClaimed, bucketWebhookDests} {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.ResetWebhookClaims(); err != nil || n != 1 {
		t.Fatalf("reset claims = %d, %v; want the one claimed in the old layout", n, err)
	}
	got, err := s.ClaimWebhookDeliveries(WebhookClaim{Limit: 10, Hold: time.Hour, PerDestination: 2})
	if err != nil || len(got) != 2 {
		t.Fatalf("claim = %+v, %v", got, err)
	}
	for _, d := range got {
		if d.Destination != "hooks.example.com:443" || d.Secret != "whsec_x" {
			t.Fatalf("claimed %+v", d)
		}
	}
	if err := s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketWebhookDue) != nil {
			t.Error("the old due index is still there")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestWebhookDestination(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"https://Hooks.Example.com/in?x=1", "hooks.example.com:443"},
		{"http://h.example/", "h.example:80"},
		{"http://h.example:8080", "h.example:8080"},
		{"HTTPS://h.example", "h.example:443"},
		{"http://[2001:DB8::1]/p", "[2001:db8::1]:80"},
		{"not a url", "not a url"},
	} {
		if got := WebhookDestination(tt.url); got != tt.want {
			t.Errorf("WebhookDestination(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}
