package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convsvc/convsvc/blobstore"
	"github.com/convsvc/convsvc/httpapi"
	"github.com/convsvc/convsvc/store"
)

// readCounter is a real bbolt store that counts the key and job reads the API asks of it.
type readCounter struct {
	*store.Store
	auth, job, authJob atomic.Int32
}

func (c *readCounter) Authenticate(secret string) (store.APIKey, error) {
	c.auth.Add(1)
	return c.Store.Authenticate(secret)
}

func (c *readCounter) Job(accountID, jobID string) (store.Job, error) {
	c.job.Add(1)
	return c.Store.Job(accountID, jobID)
}

func (c *readCounter) AuthenticateJob(secret, jobID string) (store.APIKey, store.Job, error, error) {
	c.authJob.Add(1)
	return c.Store.AuthenticateJob(secret, jobID)
}

// localBlobs is the local blob store as httpapi.Blobs (as service's adapter makes it).
type localBlobs struct{ *blobstore.Store }

func (b localBlobs) DownloadURL(job store.Job, expires time.Time) string {
	return b.Store.DownloadURL(job.ID, job.Output.Bytes, expires)
}

func (b localBlobs) Seal(jobID string, start func(store.Upload) error) error {
	return b.Store.Seal(jobID, func(size int64) error { return start(store.Upload{Size: size}) })
}

func (b localBlobs) OpenOutput(_ context.Context, jobID string, _ int) (io.ReadCloser, int64, error) {
	f, out, err := b.Store.OpenOutput(jobID)
	return f, out.Bytes, err
}

// reads returns and resets the counts: Authenticate, Job, AuthenticateJob.
func (c *readCounter) reads() [3]int32 {
	return [3]int32{c.auth.Swap(0), c.job.Swap(0), c.authJob.Swap(0)}
}

// TestAPI_GetJobReadsWithItsKey: a GET of a job asks the store for the key and the job in one
// call (AuthenticateJob, one round trip on PostgreSQL: pgstore's TestRoundTrips_PerRequest),
// whatever it answers; only a long poll's later reads are Job's. Every answer keeps its
// place: an invalid key before a bad query, a bad query before a missing job. No change
// subscription is left behind.
func TestAPI_GetJobReadsWithItsKey(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "convsvc.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acct, err := st.CreateAccount("reads", 100)
	if err != nil {
		t.Fatal(err)
	}
	_, secret, err := st.CreateKey(acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	job, _, err := st.CreateJob(store.CreateJobParams{AccountID: acct.ID, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 10},
		func(store.Job) (store.Response, error) { return store.Response{Status: 201}, nil })
	if err != nil {
		t.Fatal(err)
	}
	c := &readCounter{Store: st}
	blobs, err := blobstore.Open(blobstore.Config{Dir: t.TempDir(), PublicURL: "http://127.0.0.1:1", Secret: []byte("0123456789abcdef0123")})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Store: c, Blobs: localBlobs{blobs}, Logger: slog.New(slog.DiscardHandler)}))
	defer srv.Close()
	get := func(path, key string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode, res.Header.Get("Content-Type")
	}
	for _, tc := range []struct {
		name, path, key string
		status          int
		reads           [3]int32 // Authenticate, Job, AuthenticateJob
	}{
		{"a job", "/v1/jobs/" + job.ID, secret, 200, [3]int32{0, 0, 1}},
		{"no such job", "/v1/jobs/job_nosuchjob", secret, 404, [3]int32{0, 0, 1}},
		{"a bad query before the job", "/v1/jobs/job_nosuchjob?wait=x", secret, 400, [3]int32{0, 0, 1}},
		{"an unknown key before a bad query", "/v1/jobs/" + job.ID + "?wait=x", store.NewKeySecret(), 403, [3]int32{0, 0, 1}},
		{"no key", "/v1/jobs/" + job.ID, "", 401, [3]int32{0, 0, 0}},
		// The wait ends on its deadline (the job stays created) and reads again with Job.
		{"a long poll", "/v1/jobs/" + job.ID + "?wait=1", secret, 200, [3]int32{0, 1, 1}},
	} {
		if status, _ := get(tc.path, tc.key); status != tc.status {
			t.Fatalf("%s: status %d, want %d", tc.name, status, tc.status)
		}
		if got := c.reads(); got != tc.reads {
			t.Fatalf("%s: reads (Authenticate, Job, AuthenticateJob) %v, want %v", tc.name, got, tc.reads)
		}
	}
	if n := st.Waiters(); n != 0 {
		t.Fatalf("%d change subscriptions left open", n)
	}
}
