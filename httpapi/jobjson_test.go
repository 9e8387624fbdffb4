package httpapi

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
)

// fuzzJobView builds a job view from fuzzed fields; bits of nils chooses which pointers are nil.
func fuzzJobView(id, status, errMsg, url string, nums int64, nanos int64, nils uint8) jobView {
	at := time.Unix(0, nanos).UTC()
	later := at.Add(time.Duration(nums % int64(time.Hour)))
	v := jobView{
		ID: id, Status: status, InputFormat: "png", TargetFormat: status + id,
		Attempt: int(nums % 7), ExpiresAt: at.In(time.FixedZone("", int(nums%50000))), CreatedAt: later,
	}
	if nils&1 == 0 {
		v.InputBytes = &nums
	}
	if nils&2 == 0 {
		v.ErrorCode, v.ErrorMessage = &status, &errMsg
	}
	if nils&4 == 0 {
		v.StartedAt = &later
	}
	if nils&8 == 0 {
		v.FinishedAt = &at
	}
	if nils&16 == 0 {
		v.Output = &outputView{Bytes: nums, SHA256: id, URL: url, URLExpiresIn: int(nums % 1000)}
		switch nums % 3 {
		case 0:
			v.Output.Warnings = []warningView{}
		case 1, -1:
			v.Output.Warnings = []warningView{{Code: status, Message: errMsg}, {Code: id, Message: url}}
		}
	}
	if nils&32 == 0 {
		lossless := nils&64 == 0
		v.Options = &convert.Options{Quality: int(nums % 101), Width: int(nums % 5000), Fit: errMsg, Lossless: &lossless}
	}
	return v
}

// FuzzJobViewJSON: the job, reservation and list views write exactly the bytes encoding/json writes for the same
// fields with HTML escaping off, or fail where it fails.
func FuzzJobViewJSON(f *testing.F) {
	f.Add("job_0VbgaKDZq1KayMsTx6fxmo1S", "created", "", "http://127.0.0.1:8081/outputs/job_x?expires=1&sig=ab", int64(100), int64(1795334381529281825), uint8(0xff))
	f.Add("job_\"quoted\"\\", "failed", "<b>bad</b> & \u2028 \x00 \xff", "http://h/?a=1&b=<2>", int64(-1), int64(0), uint8(0))
	f.Add("ok", "queued", "é", "", int64(math.MaxInt64), int64(math.MinInt64), uint8(0x15))
	f.Fuzz(func(t *testing.T, id, status, errMsg, url string, nums, nanos int64, nils uint8) {
		v := fuzzJobView(id, status, errMsg, url, nums, nanos, nils)
		for _, view := range []struct {
			name string
			v    any
		}{
			{"job", v},
			{"reservation", reservationView{Job: v, UploadURL: url + errMsg, UploadExpiresIn: int(nums % 900)}},
			{"list", jobListView{Data: []jobView{v, fuzzJobView(url, errMsg, id, status, nums/3, nanos/5, ^nils)}, HasMore: nils&1 == 0}},
		} {
			got, gerr := marshalJSON(view.v)
			want, werr := reflectJSON(view.v)
			if (gerr == nil) != (werr == nil) || !bytes.Equal(got, want) {
				t.Fatalf("%s:\n got %s (%v)\nwant %s (%v)", view.name, got, gerr, want, werr)
			}
			if gerr == nil && !json.Valid(got) {
				t.Fatalf("%s: invalid JSON %s", view.name, got)
			}
		}
	})
}

// TestJobViewJSON_YearPast9999 fails the response as encoding/json does: RFC 3339 has no
// room for the year.
func TestJobViewJSON_YearPast9999(t *testing.T) {
	v := fuzzJobView("job_1", "created", "", "", 1, 0, 0xff)
	v.CreatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := marshalJSON(v); err == nil {
		t.Fatal("a job created in year 10000 encoded")
	}
	if _, err := marshalJSON(reservationView{Job: v}); err == nil {
		t.Fatal("a reservation of a job created in year 10000 encoded")
	}
	if _, err := marshalJSON(jobListView{Data: []jobView{fuzzJobView("job_0", "queued", "", "", 1, 0, 0), v}}); err == nil {
		t.Fatal("a list with a job created in year 10000 encoded")
	}
	v.CreatedAt = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
	if got, err := marshalJSON(v); err != nil || !bytes.Contains(got, []byte(`"created_at":"9999-12-31T23:59:59.999999999Z"`)) {
		t.Fatalf("year 9999: %s, %v", got, err)
	}
}

// BenchmarkJobViewJSON is a start's response body, the view of a queued job: written by the
// view itself (marshalJSON) and through encoding/json's reflection, as before.
func BenchmarkJobViewJSON(b *testing.B) {
	v := fuzzJobView("job_0VbgaKDZq1KayMsTx6fxmo1S", "queued", "", "", 100, 1795334381529281825, 0xff&^4)
	for name, encode := range map[string]func(any) ([]byte, error){"self": marshalJSON, "reflection": reflectJSON} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encode(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
