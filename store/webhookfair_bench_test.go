package store

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BenchmarkClaimWebhookDeliveries_Backlog is one claim while one account has a backlog of n due
// deliveries to a destination at its cap (2 in flight) and 50 other accounts have one due
// delivery each: the claim takes the 50 and looks at no more than 64 of the backlog, so its
// cost does not grow with n. Each iteration puts the 50 back.
func BenchmarkClaimWebhookDeliveries_Backlog(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("backlog=%d", n), func(b *testing.B) {
			s, err := Open(filepath.Join(b.TempDir(), "convsvc.db"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			past := time.Now().Add(-time.Hour)
			put := func(tx *bolt.Tx, acct, id, url string, claimed bool) error {
				d := WebhookDelivery{ID: id, EventID: id, EventType: "job.cancelled", AccountID: acct, JobID: id, URL: url,
					Destination: WebhookDestination(url), Job: []byte(`{}`), CreatedAt: past, State: DeliveryPending, NextAttemptAt: past}
				if claimed {
					d.Claimed, d.NextAttemptAt = true, time.Now().Add(time.Hour)
					if err := putClaimed(tx, d); err != nil {
						return err
					}
				}
				if err := putDelivery(tx, d); err != nil {
					return err
				}
				return putQueued(tx, d)
			}
			others := make([]string, 50)
			if err := s.webhookUpdate(func(tx *bolt.Tx) error {
				for i := range n + 2 {
					if err := put(tx, "acct_backlog", fmt.Sprintf("d%06d", i), "https://slow.example/hook", i < 2); err != nil {
						return err
					}
				}
				if err := putJSON(tx.Bucket(bucketWebhookSecrets), []byte("acct_backlog"), WebhookSigningSecret{Secret: "whsec_x"}); err != nil {
					return err
				}
				for i := range others {
					others[i] = fmt.Sprintf("acct_%03d", i)
					if err := putJSON(tx.Bucket(bucketWebhookSecrets), []byte(others[i]), WebhookSigningSecret{Secret: "whsec_x"}); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			claim := WebhookClaim{Limit: 64, Hold: time.Hour, PerDestination: 2, PerAccount: 8}
			var got []WebhookDelivery
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				if err := s.webhookUpdate(func(tx *bolt.Tx) error {
					for _, d := range got { // the last iteration's claims: out of flight and queue
						if err := tx.Bucket(bucketWebhookClaimed).Delete([]byte(d.ID)); err != nil {
							return err
						}
						if err := deleteQueued(tx, d); err != nil {
							return err
						}
					}
					for _, a := range others {
						if err := put(tx, a, "o"+a, "https://"+a+".example/hook", false); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				got, err = s.ClaimWebhookDeliveries(claim)
				if err != nil || len(got) != len(others) {
					b.Fatalf("claimed %d, %v; want %d", len(got), err, len(others))
				}
			}
		})
	}
}
