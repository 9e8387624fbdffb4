package pgstore_test

import (
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// scanJob reads a row of jobCols from its raw values (jobRow.ScanRow) instead of pgx's scan
// plans; this holds it to pgx's own Scan, column for column: a new job (its nullable columns
// NULL), one with every column set (times before 1970 and with microseconds, JSON, the
// upload, the output), and the rows pgx refuses (an infinite time; a NULL output_bytes
// beside an output_sha256 is not one of them), which both ways must refuse alike.
func TestScanJob_RawDecodeMatchesPgx(t *testing.T) {
	s := open(t, testpg.NewDatabase(t), pgstore.Options{})
	a, err := s.CreateAccount("scan", 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	newJob := func() string {
		t.Helper()
		j, _, err := s.CreateJob(store.CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 100,
			Options: []byte(`{"quality": 80}`)}, noRender)
		if err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	same := func(name, id string, wantErr bool) {
		t.Helper()
		raw, viaPgx, rawErr, pgxErr := s.ScanJobBothWays(id)
		if wantErr {
			if rawErr == nil || pgxErr == nil || rawErr.Error() != pgxErr.Error() {
				t.Errorf("%s: errors differ or are missing:\nraw %v\npgx %v", name, rawErr, pgxErr)
			}
			return
		}
		if rawErr != nil || pgxErr != nil {
			t.Fatalf("%s: raw %v, pgx %v", name, rawErr, pgxErr)
		}
		if !reflect.DeepEqual(raw, viaPgx) {
			t.Errorf("%s: the raw decoding differs from pgx's:\nraw %#v\npgx %#v", name, raw, viaPgx)
		}
	}
	fresh := newJob()
	same("new job", fresh, false)

	full := newJob()
	if err := s.ExecForTest(`UPDATE jobs SET status = 'succeeded', attempt = 3, error_code = 'e', error_message = 'é message ✓',
		error_reason = 'memory_exceeded', created_at = '1969-07-20 20:17:40.123456+00', started_at = '1999-12-31 23:59:59.999999+00',
		finished_at = '2026-12-03 11:00:00.000001+05:30', expires_at = '9999-12-31 23:59:59.999999+00', output_bytes = -5,
		output_sha256 = 'abc', upload_size = 2147483648, upload_etag = '"etag"', upload_version_id = '', output_attempt = 2,
		output_warnings = '[{"code":"w","message":"m"}]', source_url = 'https://example.com/x', deliver_to = '{"url":"https://h/", "headers":{"A":"b"}}',
		output_verified = true, input_sha256 = repeat('a', 64), cache_base = 'base', output_cached = true, output_object = 'obj', hit_cents = 0
		WHERE id = $1`, full); err != nil {
		t.Fatal(err)
	}
	same("every column", full, false)
	if raw, _, _, _ := s.ScanJobBothWays(full); raw.Output == nil || raw.DeliverTo == nil || raw.Upload == nil || raw.HitCents == nil ||
		raw.CreatedAt.Year() != 1969 || raw.ErrorMessage != "é message ✓" || string(raw.Options) != `{"quality": 80}` {
		t.Errorf("every column: %#v", raw)
	}

	infinite := newJob()
	if err := s.ExecForTest(`UPDATE jobs SET finished_at = 'infinity' WHERE id = $1`, infinite); err != nil {
		t.Fatal(err)
	}
	same("an infinite time", infinite, true)

	if _, _, rawErr, pgxErr := s.ScanJobBothWays("no-such-job"); rawErr != store.ErrNotFound || pgxErr != store.ErrNotFound {
		t.Errorf("no row: raw %v, pgx %v, want store.ErrNotFound", rawErr, pgxErr)
	}
}

// BenchmarkJobRead is GET /v1/jobs/{id}'s store read (one statement, the 31 columns of
// jobCols scanned): allocations and this process's CPU per read (cpu-µs/op, from getrusage:
// the client's side of the round trip; PostgreSQL is another process).
func BenchmarkJobRead(b *testing.B) {
	s := open(b, testpg.NewDatabase(b), pgstore.Options{})
	a, err := s.CreateAccount("bench", 1<<40)
	if err != nil {
		b.Fatal(err)
	}
	j, _, err := s.CreateJob(store.CreateJobParams{AccountID: a.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 100}, noRender)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.StartJob(a.ID, j.ID, 100); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		if _, err := s.Job(a.ID, j.ID); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is this process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
