package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/encoding/protowire"
)

// recordJobs are job records covering every field, absent optional ones, an empty output and
// values at the edges of their varints.
func recordJobs() []Job {
	at := time.Date(2026, 11, 22, 3, 4, 5, 123456789, time.UTC)
	later := at.Add(90 * time.Second)
	return []Job{
		{ID: "job_a", AccountID: "acct_a", Seq: 1, Status: StatusCreated, InputFormat: "png",
			TargetFormat: "jpeg", InputBytes: 1, CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour)},
		{ID: "job_b", AccountID: "acct_b", Seq: 1<<64 - 1, Status: StatusSucceeded, InputFormat: "jpeg",
			TargetFormat: "webp", InputBytes: MaxInputBytes, Options: json.RawMessage(`{"quality":85}`),
			Attempt: 3, CreatedAt: at, StartedAt: &at, FinishedAt: &later, ExpiresAt: later,
			Output: &Output{Bytes: 1 << 40, SHA256: strings.Repeat("ab", 32), Warnings: []Warning{
				{Code: "sheets_dropped", Message: "sheets Costs, Notes were not converted"},
				{Code: "metadata_dropped", Message: "é\x00\"quoted\""}, {Code: "alpha_dropped"},
			}}, PrevJobID: "job_a", HitCents: new(int64)}, // a free hit's 0 cents: written, not absent
		{ID: "job_c", AccountID: "acct_c", Status: StatusFailed, ErrorCode: CodeConversionFailed,
			ErrorMessage: "bad \"input\"\n\x00é", CreatedAt: time.Unix(0, 0).UTC(), StartedAt: &at,
			FinishedAt: &at, ExpiresAt: at, Output: &Output{}},
		{ID: "job_d", Status: StatusCancelled, CreatedAt: time.Date(1900, 1, 1, 0, 0, 0, 1, time.UTC)},
	}
}

func TestJobRecord_RoundTrip(t *testing.T) {
	for _, want := range recordJobs() {
		var got Job
		if err := decodeJob(appendJob(nil, &want), &got); err != nil {
			t.Fatalf("%s: %v", want.ID, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded\n%+v\nwant\n%+v", want.ID, got, want)
		}
		if got.StartedAt != nil && got.FinishedAt != nil && got.StartedAt == got.FinishedAt {
			t.Errorf("%s: started_at and finished_at share one variable", want.ID)
		}
	}
}

// TestJobRecord_SameAsJSON checks that a job read from its protobuf record equals the same job
// read from the JSON record schema 1 wrote, so upgraded files behave the same.
func TestJobRecord_SameAsJSON(t *testing.T) {
	for _, job := range recordJobs() {
		job.PrevJobID = "" // schema 1 had no links
		js, err := json.Marshal(job)
		if err != nil {
			t.Fatal(err)
		}
		var fromJSON, fromProto Job
		if err := readJob(js, &fromJSON); err != nil {
			t.Fatalf("%s: JSON: %v", job.ID, err)
		}
		if err := readJob(appendJob(nil, &job), &fromProto); err != nil {
			t.Fatalf("%s: protobuf: %v", job.ID, err)
		}
		if !reflect.DeepEqual(fromJSON, fromProto) {
			t.Errorf("%s: JSON gives\n%+v\nprotobuf gives\n%+v", job.ID, fromJSON, fromProto)
		}
	}
}

func TestAccountRecord_RoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 22, 3, 4, 5, 6, time.UTC)
	for _, want := range []Account{
		{ID: "acct_a", Name: "default", SpendCapCents: 1000, MonthlySpend: map[string]int64{}, CreatedAt: at},
		{ID: "acct_b", Name: "n", SpendCapCents: 1 << 50, ReservedCents: 7,
			MonthlySpend:    map[string]int64{"2026-10": 12, "2026-11": 1 << 40},
			PurgedSuccesses: map[string]int64{"2026-10": 3}, CreatedAt: at, LastJobID: "job_b"},
	} {
		rec := appendAccount(nil, &want)
		var got Account
		if err := decodeAccount(rec, &got); err != nil {
			t.Fatalf("%s: %v", want.ID, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded\n%+v\nwant\n%+v", want.ID, got, want)
		}
		if again := appendAccount(nil, &got); string(again) != string(rec) {
			t.Errorf("%s: encoding is not deterministic", want.ID)
		}
	}
}

func TestRecord_Malformed(t *testing.T) {
	good := appendJob(nil, &recordJobs()[1])
	var wrongType []byte
	wrongType = protowire.AppendTag(wrongType, jobFieldStatus, protowire.VarintType)
	wrongType = protowire.AppendVarint(wrongType, 3)
	for name, rec := range map[string][]byte{
		"truncated":    good[:len(good)-3],
		"bad tag":      {0x00},
		"long varint":  {0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"wrong type":   wrongType,
		"bytes length": {0x0a, 0x7f, 'x'},
	} {
		var job Job
		if err := decodeJob(rec, &job); !errors.Is(err, errRecord) {
			t.Errorf("%s: decodeJob = %v, want errRecord", name, err)
		}
		var acct Account
		if err := decodeAccount(rec, &acct); name != "wrong type" && !errors.Is(err, errRecord) {
			t.Errorf("%s: decodeAccount = %v, want errRecord", name, err)
		}
	}
	// Fields the decoder does not know, of every wire type, are skipped.
	rec := appendJob(nil, &recordJobs()[0])
	rec = protowire.AppendTag(rec, 99, protowire.Fixed32Type)
	rec = protowire.AppendFixed32(rec, 1)
	rec = protowire.AppendTag(rec, 100, protowire.Fixed64Type)
	rec = protowire.AppendFixed64(rec, 1)
	rec = protowire.AppendTag(rec, 101, protowire.BytesType)
	rec = protowire.AppendString(rec, "later")
	var job Job
	if err := decodeJob(rec, &job); err != nil || !reflect.DeepEqual(job, recordJobs()[0]) {
		t.Errorf("unknown fields: %v, %+v", err, job)
	}
}

func TestStatusOf_Protobuf(t *testing.T) {
	for _, job := range recordJobs() {
		if got, ok := statusOf(appendJob(nil, &job)); !ok || got != job.Status {
			t.Errorf("%s: statusOf = %q %v, want %q", job.ID, got, ok, job.Status)
		}
	}
	bogus := Job{ID: "x", Status: "bogus"}
	if _, ok := statusOf(appendJob(nil, &bogus)); ok {
		t.Error("statusOf accepted an unknown status")
	}
	if _, ok := statusOf([]byte{0x0a, 0x7f}); ok {
		t.Error("statusOf accepted a truncated record")
	}
}

// TestStore_UpgradesSchema1 opens a file written by schema 1 (JSON records, the account_jobs
// index, schema number 1): its jobs and accounts read, change and count as before, a changed
// record is rewritten as protobuf, the ledger still checks, and the schema number becomes the
// current one.
func TestStore_UpgradesSchema1(t *testing.T) {
	clk := newClock()
	path := filepath.Join(t.TempDir(), "convsvc.db")
	s, err := Open(path, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	a := mustAccount(t, s, 100)
	created := mustCreate(t, s, a.ID, 10)
	queued := mustCreate(t, s, a.ID, 20)
	if _, err := s.StartJob(a.ID, queued.ID, 20); err != nil {
		t.Fatal(err)
	}
	rewriteAsOldSchema(t, s, 1)
	s.Close()

	s, err = Open(path, Options{Now: clk.Now})
	if err != nil {
		t.Fatalf("open schema 1 file: %v", err)
	}
	defer s.Close()
	raw := func(bucket []byte, key string) []byte {
		var v []byte
		s.db.View(func(tx *bolt.Tx) error {
			v = append(v, tx.Bucket(bucket).Get([]byte(key))...)
			return nil
		})
		return v
	}
	if rec := raw(bucketJobs, created.ID); !isJSONRecord(rec) {
		t.Fatalf("the oldest job, linked to nothing, was rewritten: %q", rec)
	}
	if rec := raw(bucketJobs, queued.ID); isJSONRecord(rec) {
		t.Fatalf("the newer job stayed JSON: the upgrade did not link it to the older")
	}
	if schema := raw(bucketMeta, "schema"); binary.BigEndian.Uint64(schema) != schemaVersion {
		t.Errorf("schema after open = %d, want %d", binary.BigEndian.Uint64(schema), schemaVersion)
	}
	if got, err := s.Job(a.ID, created.ID); err != nil || !reflect.DeepEqual(got, created) {
		t.Errorf("Job = %+v, %v; want %+v", got, err, created)
	}
	if state, err := s.JobUploadState(queued.ID); err != nil || state != UploadSealed {
		t.Errorf("JobUploadState(queued) = %v, %v", state, err)
	}
	c, err := s.Counts()
	if err != nil || c.Jobs[StatusCreated] != 1 || c.Jobs[StatusQueued] != 1 || c.ReservedCents != 2 {
		t.Errorf("Counts = %+v, %v", c, err)
	}
	if _, err := s.StartJob(a.ID, created.ID, 10); err != nil {
		t.Fatal(err)
	}
	if rec := raw(bucketJobs, created.ID); isJSONRecord(rec) {
		t.Error("a changed job record stayed JSON")
	}

	job, ok, err := s.ClaimJob()
	if err != nil || !ok {
		t.Fatalf("ClaimJob = %s %v %v", job.ID, ok, err)
	}
	if _, err := s.FinishJob(job.ID, job.Attempt, Outcome{Output: &Output{Bytes: 1, SHA256: "x"}}); err != nil {
		t.Fatal(err)
	}
	if rec := raw(bucketAccounts, a.ID); isJSONRecord(rec) {
		t.Error("a changed account record stayed JSON")
	}
	if acct, err := s.Account(a.ID); err != nil || acct.SpentCents(clk.Now()) != 1 || acct.ReservedCents != 1 {
		t.Errorf("Account = %+v, %v", acct, err)
	}
	if err := s.VerifyLedger(); err != nil {
		t.Errorf("ledger: %v", err)
	}
}

// rewriteAsOldSchema turns s's file into one an older binary wrote: schema 1 has JSON
// records, schema 2 protobuf ones; both list jobs in the account_jobs index instead of linking
// them. s stays open.
func rewriteAsOldSchema(t *testing.T, s *Store, schema uint64) {
	t.Helper()
	err := s.db.Update(func(tx *bolt.Tx) error {
		index, err := tx.CreateBucket(bucketAccountJobs)
		if err != nil {
			return err
		}
		for _, bucket := range [][]byte{bucketJobs, bucketAccounts} {
			b := tx.Bucket(bucket)
			recs := map[string][]byte{}
			err := b.ForEach(func(k, v []byte) error {
				var old []byte
				var err error
				if string(bucket) == string(bucketJobs) {
					var job Job
					if err = decodeJob(v, &job); err != nil {
						return err
					}
					job.PrevJobID = ""
					key := binary.BigEndian.AppendUint64(append([]byte(job.AccountID), 0), job.Seq)
					if err := index.Put(key, []byte(job.ID)); err != nil {
						return err
					}
					old = appendJob(nil, &job)
					if schema == 1 {
						old, err = json.Marshal(job)
					}
				} else {
					var acct Account
					if err = decodeAccount(v, &acct); err != nil {
						return err
					}
					acct.LastJobID = ""
					old = appendAccount(nil, &acct)
					if schema == 1 {
						old, err = json.Marshal(acct)
					}
				}
				recs[string(k)] = old
				return err
			})
			if err != nil {
				return err
			}
			for k, v := range recs {
				if err := b.Put([]byte(k), v); err != nil {
					return err
				}
			}
		}
		if err := tx.DeleteBucket(bucketJobsByStatus); err != nil { // schema 4's
			return err
		}
		return tx.Bucket(bucketMeta).Put([]byte("schema"), u64(schema))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStore_UpgradesSchema2 opens a schema 2 file, whose account_jobs index lists jobs, after
// an earlier open was cut short one transaction into moving it: the index becomes links, each
// account lists the same jobs in the same order, and new jobs join the lists.
func TestStore_UpgradesSchema2(t *testing.T) {
	defer func(n int) { migrateChunk = n }(migrateChunk)
	migrateChunk = 4

	clk := newClock()
	path := filepath.Join(t.TempDir(), "convsvc.db")
	s, err := Open(path, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	a, b := mustAccount(t, s, 100), mustAccount(t, s, 100)
	want := map[string][]string{}
	for i := range 7 {
		for _, acct := range []Account{a, b} {
			if acct.ID == b.ID && i%2 == 1 {
				continue
			}
			job := mustCreate(t, s, acct.ID, 1)
			want[acct.ID] = append([]string{job.ID}, want[acct.ID]...)
		}
	}
	// a's oldest job is cancelled, then its record goes but not its index entry, which the
	// upgrade drops.
	gone, err := s.CancelJob(a.ID, want[a.ID][len(want[a.ID])-1])
	if err != nil {
		t.Fatal(err)
	}
	rewriteAsOldSchema(t, s, 2)
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketExpiry).Delete(timeKey(gone.ExpiresAt, gone.ID)); err != nil {
			return err
		}
		return tx.Bucket(bucketJobs).Delete([]byte(gone.ID))
	})
	if err != nil {
		t.Fatal(err)
	}
	want[a.ID] = want[a.ID][:len(want[a.ID])-1]
	if done, err := migrateAccountJobsChunk(s.db); err != nil || done {
		t.Fatalf("first chunk: done %v, %v", done, err)
	}
	s.Close()

	s, err = Open(path, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketAccountJobs) != nil {
			t.Error("account_jobs is still there")
		}
		return nil
	})
	for _, acct := range []Account{a, b} {
		page, more, err := s.ListJobs(acct.ID, ListParams{Limit: 100})
		if err != nil || more {
			t.Fatalf("ListJobs: more %v, %v", more, err)
		}
		var got []string
		for _, j := range page {
			got = append(got, j.ID)
		}
		newer := mustCreate(t, s, acct.ID, 1)
		if !reflect.DeepEqual(got, want[acct.ID]) || newer.PrevJobID != got[0] {
			t.Errorf("account %s lists %v, want %v; a new job follows %s", acct.ID, got, want[acct.ID], newer.PrevJobID)
		}
	}
	if err := s.VerifyLedger(); err != nil {
		t.Error(err)
	}
}

// TestStore_UpgradesSchema3 opens a schema 3 file, which has no status index: Open builds it
// from the job records in the transaction that marks the file schema 4, so filtered pages
// find every job at once; opening the file again changes nothing.
func TestStore_UpgradesSchema3(t *testing.T) {
	clk := newClock()
	path := filepath.Join(t.TempDir(), "convsvc.db")
	s, err := Open(path, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	a, b := mustAccount(t, s, 100), mustAccount(t, s, 100)
	want := map[string][]string{} // account and status -> ids, newest first
	for i := range 12 {
		acct := []Account{a, b}[i%2]
		job := mustCreate(t, s, acct.ID, 1)
		switch i % 3 {
		case 1:
			if job, err = s.CancelJob(acct.ID, job.ID); err != nil {
				t.Fatal(err)
			}
		case 2:
			if job, err = s.StartJob(acct.ID, job.ID, 1); err != nil {
				t.Fatal(err)
			}
		}
		k := acct.ID + " " + job.Status
		want[k] = append([]string{job.ID}, want[k]...)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketJobsByStatus); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put([]byte("schema"), u64(3))
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for range 2 {
		s, err = Open(path, Options{Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		s.db.View(func(tx *bolt.Tx) error {
			if v := tx.Bucket(bucketMeta).Get([]byte("schema")); bytesToU64(v) != schemaVersion {
				t.Errorf("schema %d after the upgrade", bytesToU64(v))
			}
			return nil
		})
		for _, acct := range []Account{a, b} {
			for _, st := range []string{StatusCreated, StatusQueued, StatusCancelled} {
				page, more, err := s.ListJobs(acct.ID, ListParams{Limit: 100, Status: st})
				if err != nil || more {
					t.Fatalf("ListJobs: more %v, %v", more, err)
				}
				var got []string
				for _, j := range page {
					got = append(got, j.ID)
				}
				if k := acct.ID + " " + st; !reflect.DeepEqual(got, want[k]) {
					t.Errorf("account %s lists %s jobs %v, want %v", acct.ID, st, got, want[k])
				}
			}
		}
		if err := s.VerifyLedger(); err != nil {
			t.Error(err)
		}
		s.Close()
	}
}

func TestOpen_RefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "convsvc.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		return b.Put([]byte("schema"), u64(schemaVersion+1))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if s, err := Open(path, Options{}); err == nil {
		s.Close()
		t.Fatal("opened a file of a newer schema")
	} else if !strings.Contains(err.Error(), "newer than this binary") {
		t.Errorf("error = %v", err)
	}
}

// FuzzJobRecord feeds arbitrary bytes to the job and account decoders: they never panic, and
// whatever decodes encodes to a record that decodes to the same value.
func FuzzJobRecord(f *testing.F) {
	for _, job := range recordJobs() {
		f.Add(appendJob(nil, &job))
	}
	f.Add(appendAccount(nil, &Account{ID: "a", MonthlySpend: map[string]int64{"2026-11": 5}}))
	f.Add([]byte(`{"id":"x"}`))
	f.Fuzz(func(t *testing.T, rec []byte) {
		var job Job
		if err := decodeJob(rec, &job); err == nil {
			var again Job
			if err := decodeJob(appendJob(nil, &job), &again); err != nil || !reflect.DeepEqual(again, normalJob(job)) {
				t.Fatalf("job re-decode: %v\n%+v\n%+v", err, again, job)
			}
		}
		var acct Account
		if err := decodeAccount(rec, &acct); err == nil {
			var again Account
			if err := decodeAccount(appendAccount(nil, &acct), &again); err != nil || !reflect.DeepEqual(again, acct) {
				t.Fatalf("account re-decode: %v\n%+v\n%+v", err, again, acct)
			}
		}
		statusOf(rec)
	})
}

// normalJob is job as its encoding keeps it: empty options are not written.
func normalJob(job Job) Job {
	if len(job.Options) == 0 {
		job.Options = nil
	}
	return job
}

// BenchmarkRecord compares the job and account records' encodings, decode then encode as a
// create or start does inside its transaction: schema 1's JSON against protobuf.
func BenchmarkRecord(b *testing.B) {
	job := recordJobs()[1]
	at := job.CreatedAt
	acct := Account{ID: "acct_0123456789abcdef", Name: "default", SpendCapCents: 100000, ReservedCents: 12,
		MonthlySpend: map[string]int64{"2026-10": 4000, "2026-11": 1234}, CreatedAt: at}
	jobJSON, _ := json.Marshal(job)
	acctJSON, _ := json.Marshal(acct)
	b.Run("job/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var j Job
			if err := json.Unmarshal(jobJSON, &j); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(j); err != nil {
				b.Fatal(err)
			}
		}
	})
	jobProto := appendJob(nil, &job)
	b.Run("job/protobuf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var j Job
			if err := decodeJob(jobProto, &j); err != nil {
				b.Fatal(err)
			}
			appendJob(make([]byte, 0, 256), &j)
		}
	})
	b.Run("account/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a Account
			if err := json.Unmarshal(acctJSON, &a); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(a); err != nil {
				b.Fatal(err)
			}
		}
	})
	acctProto := appendAccount(nil, &acct)
	b.Run("account/protobuf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a Account
			if err := decodeAccount(acctProto, &a); err != nil {
				b.Fatal(err)
			}
			appendAccount(make([]byte, 0, 128), &a)
		}
	})
}
