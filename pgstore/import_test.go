package pgstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
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
// without replace and replaces with it; data that fails the in-transaction ledger check (a
// wrong reservation, a job of an account it does not hold), or a running job, leaves the
// database empty.
func TestImport(t *testing.T) {
	ctx := context.Background()
	s := open(t, testpg.NewDatabase(t), pgstore.Options{})
	bad := importData()
	bad.Accounts[0].ReservedCents = 0 // one unfinished job, no reservation
	if _, err := s.Import(ctx, bad, false); !errors.Is(err, pgstore.ErrImportCheck) {
		t.Fatalf("import with a wrong reservation: %v, want ErrImportCheck", err)
	}
	orphan := importData() // a second job, of an account the data does not hold
	orphan.Jobs = append(orphan.Jobs, orphan.Jobs[0])
	orphan.Jobs[1].ID, orphan.Jobs[1].AccountID = store.NewJobID(orphan.Jobs[0].CreatedAt), "acct_nobody"
	if _, err := s.Import(ctx, orphan, false); !errors.Is(err, pgstore.ErrImportCheck) || !strings.Contains(err.Error(), "account acct_nobody, which does not exist") {
		t.Fatalf("import of a job of no account: %v, want ErrImportCheck naming acct_nobody", err)
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

// TestImport_Cache imports a real bbolt file whose conversion cache has one entry used by
// two jobs answered from it (charged 3 cents each): the jobs keep their cached output and its
// object, the entry and the totals arrive, the references are counted from the jobs, and
// the ledger holds. Deleting the converting job, then one of the two hits keeps the output;
// deleting the last makes it dead and drops its entry, as on the old server.
func TestImport_Cache(t *testing.T) {
	base := time.Now().UTC().Truncate(time.Millisecond)
	var tick time.Duration
	three := int64(3)
	b, err := store.Open(filepath.Join(t.TempDir(), "convsvc.db"), store.Options{Retention: time.Hour, CacheHitCents: &three,
		Now: func() time.Time { tick += time.Second; return base.Add(tick) }}) // each job expires after the one before
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	acct, err := b.CreateAccount("cached", 100)
	if err != nil {
		t.Fatal(err)
	}
	sha := strings.Repeat("ab", 32)
	create := func() store.Job {
		t.Helper()
		job, _, err := b.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpg", InputBytes: 10,
			InputSHA256: sha, CacheBase: "base"}, func(store.Job) (store.Response, error) { return store.Response{Status: 201}, nil })
		if err != nil {
			t.Fatal(err)
		}
		return job
	}
	first := create()
	if _, err := b.StartSealedJob(acct.ID, first.ID, store.Upload{Size: 10, SHA256: sha}); err != nil {
		t.Fatal(err)
	}
	claimed, ok, err := b.ClaimJob()
	if err != nil || !ok || claimed.ID != first.ID {
		t.Fatalf("claim: %+v, %v, %v", claimed, ok, err)
	}
	if _, err := b.FinishJob(first.ID, claimed.Attempt, store.Outcome{Output: &store.Output{Bytes: 6, SHA256: strings.Repeat("cd", 32)}}); err != nil {
		t.Fatal(err)
	}
	hits := []store.Job{create(), create()}
	for _, h := range hits {
		if h.Output == nil || h.Output.Object != first.ID || h.Charge() != 3 {
			t.Fatalf("bbolt's hit %+v: want %s's output for 3 cents", h.Output, first.ID)
		}
	}
	if err := b.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
	dump, err := b.Dump()
	if err != nil {
		t.Fatal(err)
	}
	key := store.CacheKey("base", sha)
	if len(dump.CacheEntries) != 1 || dump.CacheEntries[0].Key != key || dump.CacheEntries[0].Object != first.ID {
		t.Fatalf("dumped cache entries %+v, want %s's", dump.CacheEntries, first.ID)
	}

	ctx := context.Background()
	s := open(t, testpg.NewDatabase(t), pgstore.Options{})
	counts, err := s.Import(ctx, pgstore.ImportData{Accounts: dump.Accounts, Keys: dump.Keys, Jobs: dump.Jobs, CacheEntries: dump.CacheEntries}, false)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Jobs != 3 || counts.CacheEntries != 1 || counts.CacheRefs != 1 {
		t.Fatalf("counts = %+v; want 3 jobs, 1 cache entry, 1 output's references", counts)
	}
	if err := s.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		got, err := s.Job(acct.ID, h.ID)
		if err != nil || got.Output == nil || !got.Output.Cached || got.Output.Object != first.ID || got.Output.Bytes != 6 || got.Charge() != 3 {
			t.Fatalf("imported hit %+v (output %+v), %v; want %s's 6 bytes, cached, for 3 cents", got, got.Output, err, first.ID)
		}
	}
	if e, ok, err := s.CachedOutput(key); err != nil || !ok || e.Object != first.ID || e.Output.Bytes != 6 || !e.LastUsed.Equal(dump.CacheEntries[0].LastUsed) {
		t.Fatalf("imported entry %+v, %v, %v", e, ok, err)
	}
	if st, err := s.CacheStats(); err != nil || st.Entries != 1 || st.Bytes != 6 {
		t.Fatalf("CacheStats %+v, %v; want 1 entry of 6 bytes", st, err)
	}
	// An hour and more on (PostgreSQL's clock is not the test's: the jobs' expires_at move
	// back instead), ExpireJobs(1) deletes the jobs in expiry order.
	if _, err := s.Pool().Exec(ctx, `UPDATE jobs SET expires_at = expires_at - interval '2 hours'`); err != nil {
		t.Fatal(err)
	}
	expire := func(want string, held bool) {
		t.Helper()
		if deleted, _, err := s.ExpireJobs(1); err != nil || len(deleted) != 1 || deleted[0] != want {
			t.Fatalf("ExpireJobs(1) = %v, %v; want [%s]", deleted, err, want)
		}
		if got, err := s.OutputHeld(first.ID); err != nil || got != held {
			t.Fatalf("after deleting %s OutputHeld(%s) = %v, %v; want %v", want, first.ID, got, err, held)
		}
		if err := s.VerifyLedger(); err != nil {
			t.Fatal(err)
		}
	}
	expire(first.ID, true)
	expire(hits[0].ID, true) // the other hit still uses it
	if dead, err := s.DeadOutputs(); err != nil || len(dead) != 0 {
		t.Fatalf("DeadOutputs %v, %v; want none while a job uses it", dead, err)
	}
	expire(hits[1].ID, false)
	if dead, err := s.DeadOutputs(); err != nil || len(dead) != 1 || dead[0] != first.ID {
		t.Fatalf("DeadOutputs %v, %v; want [%s]", dead, err, first.ID)
	}
	if _, ok, err := s.CachedOutput(key); err != nil || ok {
		t.Fatalf("entry after its output's last job: %v, %v; want gone", ok, err)
	}
	// A replace empties the cache's tables with the jobs.
	if _, err := s.Import(ctx, importData(), true); err != nil {
		t.Fatal(err)
	}
	if st, err := s.CacheStats(); err != nil || st.Entries != 0 || st.Bytes != 0 {
		t.Fatalf("CacheStats after a replace %+v, %v; want empty", st, err)
	}
	if dead, err := s.DeadOutputs(); err != nil || len(dead) != 0 {
		t.Fatalf("DeadOutputs after a replace %v, %v; want none", dead, err)
	}
}

// TestImport_LocksTablesInOrder: an import locks every table it writes before it writes
// anything, the conversion cache's too (a node's DropCacheEntry or sweep writes them alone),
// in cache.go's lock order and then the others: with each table held by a transaction that
// writes it (ROW EXCLUSIVE, standing in for live nodes), Import waits for them one by one in
// that order, and then imports.
func TestImport_LocksTablesInOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("SQL alone, no Go concurrency: the plain run covers it")
	}
	url := testpg.NewDatabase(t)
	s := open(t, url, pgstore.Options{})
	tables := []string{"rate_windows", "jobs", "accounts", "cache_entries", "cache_refs", "cache_dead", "month_spend", "cache_inflight", "cache_totals",
		"api_keys", "webhook_endpoints", "webhook_signing_secrets", "job_webhooks", "webhook_deliveries", "presets"}
	locks := make([]string, len(tables))
	for i, table := range tables {
		locks[i] = "LOCK TABLE " + table + " IN ROW EXCLUSIVE MODE"
	}
	var counts pgstore.ImportCounts
	order, err := waitOrder(t, url, locks, func() (err error) {
		counts, err = s.Import(context.Background(), importData(), false)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, locks) {
		t.Errorf("the import waited for\n%s\nwant\n%s", strings.Join(order, "\n"), strings.Join(locks, "\n"))
	}
	if counts.Jobs != 1 || counts.Accounts != 1 {
		t.Fatalf("imported %+v", counts)
	}
}
