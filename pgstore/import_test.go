package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// importData is one account with a key, one queued job (reserving its cent) and one
// success of last month that retention purged.
func importData() pgstore.ImportData {
	created := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	secret := store.NewKeySecret()
	hash := store.HashKey(secret)
	started := created.Add(time.Second)
	return pgstore.ImportData{
		Accounts: []store.Account{{ID: "acct_import1", Name: "imported", SpendCapCents: 10, ReservedCents: 1, CreatedAt: created,
			MonthlySpend: map[string]int64{"2026-01": 1}, PurgedSuccesses: map[string]int64{"2026-01": 1}}},
		Keys: []store.APIKey{{ID: "key_import1", AccountID: "acct_import1", Prefix: secret[:store.KeyDisplayPrefixLen],
			Hash: hash[:], CreatedAt: created}},
		Jobs: []store.Job{{ID: store.NewJobID(created), AccountID: "acct_import1", Status: store.StatusQueued, InputFormat: "png",
			TargetFormat: "jpeg", InputBytes: 5, Attempt: 1, CreatedAt: created, StartedAt: &started,
			ExpiresAt: time.Now().Add(time.Hour), SourceURL: "https://cdn.example/a.png?t=1",
			DeliverTo: &store.Delivery{URL: "https://bucket.example/o?sig=2", Headers: map[string]string{"Content-Type": "image/jpeg"}}}},
	}
}

// TestImport: the rows land as given and the ledger holds; a second import is refused
// without replace and replaces with it; data that fails the in-transaction ledger check, or
// a running job, leaves the database empty.
func TestImport(t *testing.T) {
	ctx := context.Background()
	s := open(t, testpg.NewDatabase(t), pgstore.Options{})
	bad := importData()
	bad.Accounts[0].ReservedCents = 0 // one unfinished job, no reservation
	if _, err := s.Import(ctx, bad, false); !errors.Is(err, pgstore.ErrImportCheck) {
		t.Fatalf("import with a wrong reservation: %v, want ErrImportCheck", err)
	}
	running := importData()
	running.Jobs[0].Status = store.StatusRunning
	if _, err := s.Import(ctx, running, false); !errors.Is(err, store.ErrInvalidArgument) {
		t.Fatalf("import of a running job: %v, want ErrInvalidArgument", err)
	}
	if has, err := s.HasData(); err != nil || has {
		t.Fatalf("after failed imports HasData = %v, %v; want an empty database", has, err)
	}

	d := importData()
	counts, err := s.Import(ctx, d, false)
	if err != nil {
		t.Fatal(err)
	}
	if counts != (pgstore.ImportCounts{Accounts: 1, Keys: 1, Jobs: 1, Months: 1}) {
		t.Fatalf("counts = %+v", counts)
	}
	if err := s.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
	acct, err := s.Account("acct_import1")
	if err != nil || acct.ReservedCents != 1 || acct.MonthlySpend["2026-01"] != 1 || acct.PurgedSuccesses["2026-01"] != 1 ||
		!acct.CreatedAt.Equal(d.Accounts[0].CreatedAt) {
		t.Fatalf("account = %+v, %v", acct, err)
	}
	job, err := s.Job("acct_import1", d.Jobs[0].ID)
	if err != nil || job.Status != store.StatusQueued || job.Attempt != 1 || !job.StartedAt.Equal(*d.Jobs[0].StartedAt) ||
		job.SourceURL != d.Jobs[0].SourceURL || job.DeliverTo == nil || job.DeliverTo.URL != d.Jobs[0].DeliverTo.URL ||
		job.DeliverTo.Headers["Content-Type"] != "image/jpeg" {
		t.Fatalf("job = %+v, %v", job, err)
	}
	if has, err := s.HasData(); err != nil || !has {
		t.Fatalf("HasData = %v, %v; want true", has, err)
	}
	if _, err := s.Import(ctx, importData(), false); !errors.Is(err, pgstore.ErrNotEmpty) {
		t.Fatalf("second import: %v, want ErrNotEmpty", err)
	}
	d2 := importData()
	d2.Accounts[0].Name = "replaced"
	four := int64(4)
	d2.Accounts[0].MaxRunning = &four // the queue limits come along; max_queued stays none
	if _, err := s.Import(ctx, d2, true); err != nil {
		t.Fatalf("import with replace: %v", err)
	}
	if acct, err := s.Account("acct_import1"); err != nil || acct.Name != "replaced" || acct.MaxRunning == nil || *acct.MaxRunning != 4 || acct.MaxQueued != nil {
		t.Fatalf("after replace: %+v, %v", acct, err)
	}
	if _, err := s.Job("acct_import1", d.Jobs[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the replaced import's job: %v, want ErrNotFound", err)
	}
}

// TestImport_Webhooks: endpoints keep their ids, secrets and health, the signing secret and a
// job's webhook_url land, a pending delivery is claimable with the endpoint's secret; a
// claimed delivery, or a webhook_url of a job not imported, rolls everything back.
func TestImport_Webhooks(t *testing.T) {
	ctx := context.Background()
	s := open(t, testpg.NewDatabase(t), pgstore.Options{})
	withHooks := func() pgstore.ImportData {
		d := importData()
		created := d.Accounts[0].CreatedAt
		failing := created.Add(time.Minute)
		d.WebhookEndpoints = []store.WebhookEndpoint{{ID: "whk_import1", AccountID: "acct_import1", URL: "https://hooks.example/a",
			Secret: "whsec_import_endpoint", CreatedAt: created, FailingSince: &failing}}
		d.WebhookSigningSecrets = []store.WebhookSigningSecret{{AccountID: "acct_import1", Secret: "whsec_import_signing", CreatedAt: created}}
		d.JobWebhooks = map[string]string{d.Jobs[0].ID: "https://hooks.example/job"}
		event := store.WebhookEventID("job_gone", store.StatusCancelled)
		d.WebhookDeliveries = []store.WebhookDelivery{{ID: event + ".whk_import1", EventID: event, EventType: "job.cancelled",
			AccountID: "acct_import1", JobID: "job_gone", EndpointID: "whk_import1", URL: "https://hooks.example/a",
			Job: []byte(`{"id":"job_gone"}`), CreatedAt: created, State: store.DeliveryPending, Attempts: 1, NextAttemptAt: created}}
		return d
	}
	claimed := withHooks()
	claimed.WebhookDeliveries[0].Claimed = true
	if _, err := s.Import(ctx, claimed, false); !errors.Is(err, store.ErrInvalidArgument) {
		t.Fatalf("import of a claimed delivery: %v, want ErrInvalidArgument", err)
	}
	orphan := withHooks()
	orphan.JobWebhooks["job_not_imported"] = "https://hooks.example/x"
	if _, err := s.Import(ctx, orphan, false); err == nil {
		t.Fatal("import of a webhook_url of a job not imported succeeded")
	}
	if has, err := s.HasData(); err != nil || has {
		t.Fatalf("after failed imports HasData = %v, %v; want an empty database", has, err)
	}

	d := withHooks()
	counts, err := s.Import(ctx, d, false)
	if err != nil {
		t.Fatal(err)
	}
	if counts.WebhookEndpoints != 1 || counts.WebhookSigningSecrets != 1 || counts.JobWebhooks != 1 || counts.WebhookDeliveries != 1 {
		t.Fatalf("counts = %+v", counts)
	}
	eps, err := s.WebhookEndpoints("acct_import1")
	if err != nil || len(eps) != 1 || eps[0].ID != "whk_import1" || eps[0].Secret != "whsec_import_endpoint" ||
		eps[0].FailingSince == nil || !eps[0].FailingSince.Equal(*d.WebhookEndpoints[0].FailingSince) {
		t.Fatalf("endpoints = %+v, %v", eps, err)
	}
	if rec, err := s.WebhookSigningSecret("acct_import1"); err != nil || rec.Secret != "whsec_import_signing" {
		t.Fatalf("signing secret = %+v, %v", rec, err)
	}
	if url, err := s.JobWebhookURL(d.Jobs[0].ID); err != nil || url != "https://hooks.example/job" {
		t.Fatalf("job webhook_url = %q, %v", url, err)
	}
	got, err := s.ClaimWebhookDeliveries(store.WebhookClaim{Limit: 10, Hold: time.Minute})
	if err != nil || len(got) != 1 || got[0].ID != d.WebhookDeliveries[0].ID || got[0].Secret != "whsec_import_endpoint" || got[0].Attempts != 2 {
		t.Fatalf("claim after import = %+v, %v; want the delivery at attempt 2 with the endpoint's secret", got, err)
	}
	// Replacing deletes the webhook rows with the accounts they belong to.
	if _, err := s.Import(ctx, withHooks(), true); err != nil {
		t.Fatalf("replace over webhook rows: %v", err)
	}
}

// TestImport_Presets: presets land with their options and times, a presets-only key keeps its
// limit, and a replace removes the presets that were there.
func TestImport_Presets(t *testing.T) {
	ctx := context.Background()
	s := open(t, testpg.NewDatabase(t), pgstore.Options{})
	d := importData()
	d.Keys[0].PresetsOnly = true
	at := d.Accounts[0].CreatedAt
	d.Presets = []store.Preset{{Name: "web-thumb", TargetFormat: "webp", Options: []byte(`{"width":320}`), CreatedAt: at, UpdatedAt: at.Add(time.Hour)}}
	counts, err := s.Import(ctx, d, false)
	if err != nil || counts.Presets != 1 {
		t.Fatalf("Import = %+v, %v", counts, err)
	}
	p, err := s.Preset("web-thumb")
	if err != nil || p.TargetFormat != "webp" || string(p.Options) != `{"width":320}` || !p.CreatedAt.Equal(at) || !p.UpdatedAt.Equal(at.Add(time.Hour)) {
		t.Fatalf("Preset = %+v, %v", p, err)
	}
	keys, err := s.Keys("acct_import1")
	if err != nil || len(keys) != 1 || !keys[0].PresetsOnly {
		t.Fatalf("Keys = %+v, %v", keys, err)
	}
	d.Presets = nil
	if _, err := s.Import(ctx, d, true); err != nil {
		t.Fatal(err)
	}
	if list, err := s.Presets(); err != nil || len(list) != 0 {
		t.Fatalf("presets after a replace without them: %+v, %v", list, err)
	}
}
