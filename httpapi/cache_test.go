package httpapi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// TestAPI_CacheCreateAndChecksum: the API's side of the conversion cache (docs/cache.md),
// every answer held against the OpenAPI document: a create with the input_sha256 of a file
// converted before answers the job succeeded with output.cached; a start whose upload differs
// from input_sha256 is 409 checksum_mismatch and cancels the job; a malformed input_sha256 is
// 400 naming the field, and so is one beside source_url.
func TestAPI_CacheCreateAndChecksum(t *testing.T) {
	testenv.LocalBlobsOnly(t, "the cache needs the upload's hash at start")
	e := testenv.Start(t, testenv.Cache)
	png := testenv.Sample(t, "images/sample.png")
	h := sha256.Sum256(png)
	sum := hex.EncodeToString(h[:])
	e.Convert(e.Key, "png", "jpeg", png)

	body := func(extra string) string {
		return `{"input_format":"png","target_format":"jpeg","input_bytes":` + strconv.Itoa(len(png)) + extra + `}`
	}
	r := e.Do("POST", "/v1/jobs", e.Key, body(`,"input_sha256":"`+sum+`"`))
	must(t, r, 200, "")
	var hit testenv.Reservation
	r.JSON(t, &hit)
	if hit.Job.Status != "succeeded" || hit.Job.Output == nil || !hit.Job.Output.Cached {
		t.Fatalf("create with a cached input: %s %+v", hit.Job.Status, hit.Job.Output)
	}
	if got := e.Get(e.Key, hit.Job.ID, 0); got.Output == nil || !got.Output.Cached {
		t.Fatalf("read back: %+v", got.Output)
	}

	r = e.Do("POST", "/v1/jobs", e.Key, body(`,"input_sha256":"`+strings.Repeat("0", 64)+`"`))
	must(t, r, 200, "")
	var wrong testenv.Reservation
	r.JSON(t, &wrong)
	must(t, e.Upload(wrong.UploadURL, png), 200, "")
	must(t, e.Start(e.Key, wrong.Job.ID), 409, "checksum_mismatch")
	if j := e.Get(e.Key, wrong.Job.ID, 0); j.Status != "cancelled" {
		t.Fatalf("job after checksum_mismatch: %s", j.Status)
	}
	must(t, e.Start(e.Key, wrong.Job.ID), 200, "") // the cancelled job, as it is

	for _, extra := range []string{`,"input_sha256":"` + strings.ToUpper(sum) + `"`, `,"input_sha256":""`,
		`,"input_sha256":"` + sum + `","source_url":"https://example.com/a.png"`} {
		r := e.Do("POST", "/v1/jobs", e.Key, body(extra))
		must(t, r, 400, "invalid_request")
		if !strings.Contains(string(r.Body), "input_sha256") {
			t.Fatalf("%s: %s does not name input_sha256", extra, r.Body)
		}
	}
	must(t, e.Do("POST", "/v1/jobs", e.Key, body(`,"cache":"no"`)), 400, "invalid_request")
}
