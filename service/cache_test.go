package service_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// cacheBackends are the stores the cache tests run on, each with the cache on.
var cacheBackends = []struct {
	name string
	opts func(t *testing.T) []func(*service.Config)
}{
	{"bbolt", func(*testing.T) []func(*service.Config) { return []func(*service.Config){testenv.Cache} }},
	{"postgres", func(t *testing.T) []func(*service.Config) {
		return []func(*service.Config){testenv.Postgres(t), testenv.Cache}
	}},
	{"postgres+s3", func(t *testing.T) []func(*service.Config) {
		return []func(*service.Config){testenv.Postgres(t), testenv.S3(t), testenv.Cache}
	}},
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// createCached reserves a png -> jpeg job of data's size with extra create fields.
func createCached(e *testenv.Env, key string, size int, extra map[string]any) testenv.Response {
	e.T.Helper()
	body := map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": size}
	for k, v := range extra {
		body[k] = v
	}
	return e.Do("POST", "/v1/jobs", key, body)
}

func download(t *testing.T, e *testenv.Env, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("download: %d %v", resp.StatusCode, err)
	}
	return b
}

// TestCache_SkipsUploadAndConversion holds issue 35 item 1 through the whole service on both
// stores: a create with the input_sha256 of a file converted before is answered succeeded with
// the cached output (output.cached) and takes no upload; a start whose upload hashes as a
// cached input is answered from the cache too; each costs its cent. A malformed input_sha256
// is 400 naming the field; a wrong one cancels the job at start (409 checksum_mismatch) and
// releases its cent; "cache": false and another account convert; a cached output deleted from
// object storage is not served.
func TestCache_SkipsUploadAndConversion(t *testing.T) {
	for _, b := range cacheBackends {
		t.Run(b.name, func(t *testing.T) {
			e := testenv.Start(t, b.opts(t)...)
			png := testenv.Sample(t, "images/sample.png")
			sum := sha256Hex(png)

			for _, bad := range []any{"abc", strings.ToUpper(sum), sum + "0", 12} {
				r := createCached(e, e.Key, len(png), map[string]any{"input_sha256": bad})
				testenv.MustStatus(t, r, 400, "invalid_request")
				if !strings.Contains(string(r.Body), "input_sha256") && bad != 12 {
					t.Fatalf("malformed input_sha256 %v: %s does not name the field", bad, r.Body)
				}
			}

			first := e.Convert(e.Key, "png", "jpeg", png)
			if first.Status != "succeeded" || first.Output == nil || first.Output.Cached {
				t.Fatalf("first conversion: %s %+v", first.Error(), first.Output)
			}
			want := download(t, e, first.Output.URL)

			r := createCached(e, e.Key, len(png), map[string]any{"input_sha256": sum})
			testenv.MustStatus(t, r, 200, "")
			var hit testenv.Reservation
			r.JSON(t, &hit)
			if hit.Job.Status != "succeeded" || hit.Job.Output == nil || !hit.Job.Output.Cached || hit.Job.Output.SHA256 != first.Output.SHA256 ||
				hit.Job.Output.Bytes != first.Output.Bytes || hit.Job.Output.Verified != first.Output.Verified {
				t.Fatalf("create with a cached input: %s %+v, want succeeded with the first job's output, cached", hit.Job.Status, hit.Job.Output)
			}
			if got := download(t, e, hit.Job.Output.URL); !bytes.Equal(got, want) {
				t.Fatal("the cached output's download differs from the first job's")
			}
			if e.Bucket == nil { // S3 answers its presigned PUTs itself; the sweep deletes such an upload
				testenv.MustStatus(t, e.Upload(hit.UploadURL, png), 409, "")
			}

			// Without input_sha256 the upload's hash is found at start.
			res := e.Create(e.Key, "png", "jpeg", int64(len(png)))
			testenv.MustStatus(t, e.Upload(res.UploadURL, png), 200, "")
			r = e.Start(e.Key, res.Job.ID)
			testenv.MustStatus(t, r, 200, "")
			var started testenv.Job
			r.JSON(t, &started)
			if started.Status != "succeeded" || started.Output == nil || !started.Output.Cached {
				t.Fatalf("start of a cached input: %s %+v", started.Status, started.Output)
			}
			if a := e.Account(e.AccountID); a["reserved_cents"] != 0.0 || a["spent_cents"] != 3.0 {
				t.Fatalf("account after a conversion and two hits: reserved %v spent %v, want 0 and 3", a["reserved_cents"], a["spent_cents"])
			}

			// A wrong input_sha256: the job is cancelled at start and its cent released.
			r = createCached(e, e.Key, len(png), map[string]any{"input_sha256": sha256Hex([]byte("other bytes"))})
			testenv.MustStatus(t, r, 200, "")
			var wrong testenv.Reservation
			r.JSON(t, &wrong)
			testenv.MustStatus(t, e.Upload(wrong.UploadURL, png), 200, "")
			testenv.MustStatus(t, e.Start(e.Key, wrong.Job.ID), 409, "checksum_mismatch")
			if j := e.Get(e.Key, wrong.Job.ID, 0); j.Status != "cancelled" || j.ErrorMessage == nil || !strings.Contains(*j.ErrorMessage, sum) {
				t.Fatalf("job after checksum_mismatch: %s %v", j.Status, j.ErrorMessage)
			}
			if a := e.Account(e.AccountID); a["reserved_cents"] != 0.0 || a["spent_cents"] != 3.0 {
				t.Fatalf("account after checksum_mismatch: reserved %v spent %v, want 0 and 3", a["reserved_cents"], a["spent_cents"])
			}

			// "cache": false, and another account: no hit.
			for _, c := range []struct {
				what string
				key  string
				body map[string]any
			}{
				{"cache false", e.Key, map[string]any{"input_sha256": sum, "cache": false}},
				{"another account", func() string { _, k := e.NewAccount(100); return k }(), map[string]any{"input_sha256": sum}},
			} {
				r := createCached(e, c.key, len(png), c.body)
				testenv.MustStatus(t, r, 200, "")
				var res testenv.Reservation
				r.JSON(t, &res)
				if res.Job.Status != "created" || res.Job.Output != nil {
					t.Fatalf("%s: %s, want created", c.what, res.Job.Status)
				}
			}

			m := e.Scrape()
			if h, miss := m.Value("convsvc_cache_hits_total"), m.Value("convsvc_cache_misses_total"); h != 2 || miss != 1 {
				t.Fatalf("convsvc_cache_hits_total %v, convsvc_cache_misses_total %v; want 2 and 1", h, miss)
			}
			if n, bytes := m.Value("convsvc_cache_entries"), m.Value("convsvc_cache_bytes"); n != 1 || bytes != float64(first.Output.Bytes) {
				t.Fatalf("convsvc_cache_entries %v, convsvc_cache_bytes %v; want 1 and %d", n, bytes, first.Output.Bytes)
			}

			// The cached output deleted under the cache: the next job converts instead.
			if e.Bucket != nil {
				return // the local blob store's file is what this deletes
			}
			if err := os.Remove(filepath.Join(e.Cfg.DataDir, "blobs", "outputs", first.ID)); err != nil {
				t.Fatal(err)
			}
			r = createCached(e, e.Key, len(png), map[string]any{"input_sha256": sum})
			testenv.MustStatus(t, r, 200, "")
			var after testenv.Reservation
			r.JSON(t, &after)
			if after.Job.Status != "created" {
				t.Fatalf("create after the cached output was deleted: %s, want created (converted anew)", after.Job.Status)
			}
			testenv.MustStatus(t, e.Upload(after.UploadURL, png), 200, "")
			testenv.MustStatus(t, e.Start(e.Key, after.Job.ID), 200, "")
			if j := e.WaitFinished(e.Key, after.Job.ID); j.Status != "succeeded" || j.Output.Cached {
				t.Fatalf("job after the cached output was deleted: %s %+v", j.Error(), j.Output)
			}
		})
	}
}

// TestCache_GlobalScope: with --cache-scope global another account's create is answered from
// the cache; with the default (account) it is not (TestCache_SkipsUploadAndConversion).
func TestCache_GlobalScope(t *testing.T) {
	e := testenv.Start(t, testenv.Cache, func(c *service.Config) { c.CacheScope = service.CacheScopeGlobal })
	png := testenv.Sample(t, "images/sample.png")
	e.Convert(e.Key, "png", "jpeg", png)
	_, other := e.NewAccount(100)
	r := createCached(e, other, len(png), map[string]any{"input_sha256": sha256Hex(png)})
	testenv.MustStatus(t, r, 200, "")
	var res testenv.Reservation
	r.JSON(t, &res)
	if res.Job.Status != "succeeded" || !res.Job.Output.Cached {
		t.Fatalf("another account under --cache-scope global: %s, want succeeded from the cache", res.Job.Status)
	}
}

// TestCache_IdenticalJobsOneConversion: N identical jobs started at once on two workers cost
// one conversion and N cents: a worker that claims a twin of the job converting waits for it
// (single flight) and the rest are answered at start or claim.
func TestCache_IdenticalJobsOneConversion(t *testing.T) {
	// The price of a hit (--cache-hit-cents) differs by backend, so each store's wiring of it
	// is held without another run: SPEC's 1 cent on bbolt, free on PostgreSQL, 2 cents on
	// PostgreSQL with S3.
	hitCents := map[string]int64{"bbolt": 1, "postgres": 0, "postgres+s3": 2}
	for _, b := range cacheBackends {
		t.Run(b.name, func(t *testing.T) {
			const n = 8
			price := hitCents[b.name]
			e := testenv.Start(t, append(b.opts(t), func(c *service.Config) { c.CacheHitCents = &price })...)
			png := testenv.Sample(t, "images/sample.png")
			ids := make([]string, n)
			for i := range ids {
				res := e.Create(e.Key, "png", "webp", int64(len(png)))
				testenv.MustStatus(t, e.Upload(res.UploadURL, png), 200, "")
				ids[i] = res.Job.ID
			}
			var wg sync.WaitGroup
			for _, id := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if r := e.Start(e.Key, id); r.Status != 200 {
						t.Errorf("start %s: %d %s", id, r.Status, r.Body)
					}
				}()
			}
			wg.Wait()
			cached := 0
			for _, id := range ids {
				j := e.WaitFinished(e.Key, id)
				if j.Status != "succeeded" {
					t.Fatalf("job %s: %s", id, j.Error())
				}
				if j.Output.Cached {
					cached++
				}
			}
			m := e.Scrape()
			if conv := m.Value("convsvc_conversions_total", "outcome", "succeeded"); conv != 1 || cached != n-1 {
				t.Fatalf("%v conversions and %d jobs from the cache, want 1 and %d", conv, cached, n-1)
			}
			if h := m.Value("convsvc_cache_hits_total"); h != n-1 {
				t.Fatalf("convsvc_cache_hits_total %v, want %d", h, n-1)
			}
			if a, want := e.Account(e.AccountID), 1+(n-1)*price; a["reserved_cents"] != 0.0 || a["spent_cents"] != float64(want) {
				t.Fatalf("account: reserved %v spent %v, want 0 and %d (one conversion, %d hits at %d cents)", a["reserved_cents"], a["spent_cents"], want, n-1, price)
			}
		})
	}
}
