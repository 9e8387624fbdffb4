package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testpg"
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
			ExpiresAt: time.Now().Add(time.Hour)}},
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
	if err != nil || job.Status != store.StatusQueued || job.Attempt != 1 || !job.StartedAt.Equal(*d.Jobs[0].StartedAt) {
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
	if _, err := s.Import(ctx, d2, true); err != nil {
		t.Fatalf("import with replace: %v", err)
	}
	if acct, err := s.Account("acct_import1"); err != nil || acct.Name != "replaced" {
		t.Fatalf("after replace: %+v, %v", acct, err)
	}
	if _, err := s.Job("acct_import1", d.Jobs[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the replaced import's job: %v, want ErrNotFound", err)
	}
}
