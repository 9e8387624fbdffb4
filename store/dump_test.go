package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestOpenReadOnly_Dump: a read-only open of a database that no process holds dumps every
// account, key and job and leaves the file unchanged; while another handle holds the file it
// fails with ErrLocked.
func TestOpenReadOnly_Dump(t *testing.T) {
	path := filepath.Join(t.TempDir(), "convsvc.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	acct, err := s.CreateAccount("a", 10)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := s.CreateKey(acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []Job
	for range 3 {
		job, _, err := s.CreateJob(CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 1},
			func(Job) (Response, error) { return Response{}, nil })
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, job)
	}
	if _, err := OpenReadOnly(path, Options{LockTimeout: 10 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("read-only open while the file is held: %v, want ErrLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	ro, err := OpenReadOnly(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := ro.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if len(d.Accounts) != 1 || d.Accounts[0].ID != acct.ID || d.Accounts[0].ReservedCents != 3 {
		t.Errorf("accounts = %+v", d.Accounts)
	}
	if len(d.Keys) != 1 || d.Keys[0].ID != key.ID || string(d.Keys[0].Hash) != string(key.Hash) {
		t.Errorf("keys = %+v, want %+v", d.Keys, key)
	}
	if len(d.Jobs) != 3 {
		t.Fatalf("%d jobs, want 3", len(d.Jobs))
	}
	for i, j := range d.Jobs {
		if j.ID != jobs[i].ID || j.Status != StatusCreated {
			t.Errorf("job %d = %s %s, want %s created", i, j.ID, j.Status, jobs[i].ID)
		}
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Error("the read-only open changed the file")
	}
}

// TestDump_Webhooks: Dump holds every webhook endpoint with its secret, the signing secrets,
// the jobs' webhook_url and every delivery with its state; a file without webhooks dumps none.
func TestDump_Webhooks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "convsvc.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	acct, err := s.CreateAccount("a", 10)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	ro, err := OpenReadOnly(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := ro.Dump()
	ro.Close()
	if err != nil || len(d.WebhookEndpoints)+len(d.WebhookSigningSecrets)+len(d.JobWebhooks)+len(d.WebhookDeliveries) != 0 {
		t.Fatalf("dump without webhooks: %+v, %v; want no webhook records", d, err)
	}

	if s, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	ep, err := s.CreateWebhookEndpoint(acct.ID, "https://hooks.example/a", "whsec_endpoint")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetWebhookSigningSecret(acct.ID, "whsec_signing", 0); err != nil {
		t.Fatal(err)
	}
	job, _, err := s.CreateJob(CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 1,
		WebhookURL: "https://hooks.example/job"}, func(Job) (Response, error) { return Response{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CancelJob(acct.ID, job.ID); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.ClaimWebhookDeliveries(WebhookClaim{Limit: 1, Hold: time.Hour})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	s.Close()
	if ro, err = OpenReadOnly(path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if d, err = ro.Dump(); err != nil {
		t.Fatal(err)
	}
	if len(d.WebhookEndpoints) != 1 || d.WebhookEndpoints[0].ID != ep.ID || d.WebhookEndpoints[0].Secret != "whsec_endpoint" ||
		d.WebhookEndpoints[0].URL != ep.URL || d.WebhookEndpoints[0].AccountID != acct.ID {
		t.Errorf("endpoints: %+v, want %+v", d.WebhookEndpoints, ep)
	}
	if len(d.WebhookSigningSecrets) != 1 || d.WebhookSigningSecrets[0].AccountID != acct.ID || d.WebhookSigningSecrets[0].Secret != "whsec_signing" {
		t.Errorf("signing secrets: %+v", d.WebhookSigningSecrets)
	}
	if len(d.JobWebhooks) != 1 || d.JobWebhooks[job.ID] != "https://hooks.example/job" {
		t.Errorf("job webhooks: %v", d.JobWebhooks)
	}
	ids := map[string]WebhookDelivery{}
	for _, w := range d.WebhookDeliveries {
		ids[w.ID] = w
	}
	event := WebhookEventID(job.ID, StatusCancelled)
	toEndpoint, toJob := ids[event+"."+ep.ID], ids[event+"."+DestinationJob]
	if len(ids) != 2 || toEndpoint.State != DeliveryPending || toJob.State != DeliveryPending ||
		toEndpoint.URL != ep.URL || toJob.URL != "https://hooks.example/job" || toEndpoint.Claimed == toJob.Claimed {
		t.Errorf("deliveries: %+v; want both pending, one of them claimed", d.WebhookDeliveries)
	}
}
