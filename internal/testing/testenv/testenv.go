// Package testenv starts a whole convsvc in a temp dir for tests and talks to it over real HTTP,
// validating every exchange against the OpenAPI document.
package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/httpapi/openapitest"
	"github.com/convsvc/convsvc/internal/testing/testenv/testtime"
	"github.com/convsvc/convsvc/internal/testing/tests3"
	"github.com/convsvc/convsvc/service"
)

// Env is a running service plus clients for it.
type Env struct {
	T          testing.TB
	Main       *service.Main
	Cfg        service.Config
	URL        string
	Key        string // the default account's key
	AccountID  string
	AdminToken string
	HTTP       *http.Client // validates every exchange against openapi.json
	Validator  *openapitest.Validator
	// Bucket is the service's S3 bucket when object storage is S3 (CONVSVC_TEST_OBJECT_STORAGE
	// or the S3 option), else nil; exchanges with it are not API exchanges and are not validated.
	Bucket *tests3.Bucket
}

// Start runs a service in t.TempDir(); opts may adjust the config. At cleanup it closes the
// service and checks bbolt's integrity and the ledger.
func Start(t testing.TB, opts ...func(*service.Config)) *Env {
	t.Helper()
	e := &Env{T: t}
	cfg := service.Config{
		DataDir:    filepath.Join(t.TempDir(), "data"),
		Listen:     "127.0.0.1:0",
		BlobListen: "127.0.0.1:0",
		Workers:    2,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnDefaultKey: func(acct, key string) {
			e.AccountID, e.Key = acct, key
		},
		// The conversion cache is off unless a test asks for it (Cache): tests that convert
		// one sample twice count conversions and queued jobs.
		CacheMaxBytes: -1,
	}
	if w := defaultLogWriter(); w != nil {
		cfg.Logger = jsonLogger(w)
	}
	if os.Getenv(EnvDatabase) == "postgres" {
		Postgres(t)(&cfg)
	}
	if os.Getenv(EnvObjectStorage) == "s3" {
		S3(t)(&cfg)
	}
	for _, o := range opts {
		o(&cfg)
	}
	if b, ok := buckets.Load(cfg.ObjectStorage); ok {
		e.Bucket = b.(*tests3.Bucket)
	}
	m, err := service.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.Main, e.Cfg, e.URL, e.AdminToken = m, cfg, m.URL(), m.AdminToken()
	if e.Bucket != nil && cfg.S3.Endpoint == "" {
		e.Cfg.S3.Endpoint = e.Bucket.Endpoint
	}
	v, err := SharedValidator()
	if err != nil {
		t.Fatal(err)
	}
	e.Validator = v.For(t)
	e.HTTP = e.ValidatingClient(&http.Client{Timeout: 90 * time.Second})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if service.IsPostgresURL(cfg.Database) {
			verifyPostgres(t, cfg.Database)
			return
		}
		reopen, err := openStore(cfg.DataDir)
		if err != nil {
			t.Errorf("reopen store: %v", err)
			return
		}
		defer reopen.Close()
		if err := reopen.Check(); err != nil {
			t.Errorf("bbolt check: %v", err)
		}
		if err := reopen.VerifyLedger(); err != nil {
			t.Errorf("ledger: %v", err)
		}
	})
	return e
}

// ValidatingClient returns a copy of base whose exchanges are held against the OpenAPI
// document and counted in SharedValidator's Seen, like e.HTTP's.
func (e *Env) ValidatingClient(base *http.Client) *http.Client {
	c := e.Validator.Client(base)
	if e.Cfg.ObjectStorage != "" {
		// Presigned URLs reach the S3 server, whose answers openapi.json does not describe.
		next := base.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		c.Transport = bypassHost{host: hostOf(e.Cfg.S3.Endpoint), direct: next, validated: c.Transport}
	}
	return c
}

// bypassHost sends requests to host directly and the rest through validated.
type bypassHost struct {
	host              string
	direct, validated http.RoundTripper
}

func (b bypassHost) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == b.host {
		return b.direct.RoundTrip(req)
	}
	return b.validated.RoundTrip(req)
}

func hostOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return endpoint
	}
	return u.Host
}

// Response is a decoded HTTP answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test on error.
func (r Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Map decodes the body as a JSON object.
func (r Response) Map(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.JSON(t, &m)
	return m
}

// ErrorCode is error.code of an error body, or "".
func (r Response) ErrorCode() string {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	json.Unmarshal(r.Body, &e)
	return e.Error.Code
}

// Do sends a request with the given bearer token ("" for none); body may be nil, []byte, string
// or any JSON-encodable value. Extra headers come in pairs.
func (e *Env) Do(method, url, token string, body any, headers ...string) Response {
	e.T.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.T.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	if strings.HasPrefix(url, "/") {
		url = e.URL + url
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		e.T.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.HTTP.Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.T.Fatal(err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// Reservation is the decoded create response.
type Reservation = client.Reservation

// Job is the decoded Job object.
type Job = client.Job

// MustStatus fails the test unless r has the status and, when code is set, the error code.
func MustStatus(t testing.TB, r Response, status int, code string) {
	t.Helper()
	if r.Status != status || (code != "" && r.ErrorCode() != code) {
		t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, status, code)
	}
}

// Create reserves a job and fails the test unless it is 200.
func (e *Env) Create(key, input, target string, size int64) Reservation {
	e.T.Helper()
	r := e.Do("POST", "/v1/jobs", key, map[string]any{"input_format": input, "target_format": target, "input_bytes": size})
	MustStatus(e.T, r, 200, "")
	var res Reservation
	r.JSON(e.T, &res)
	return res
}

// Upload PUTs data to a signed URL and returns the answer.
//
// On S3 two answers of the test server are sent again, up to three times, logged. versitygw's
// posix backend gave them to PUTs made just after a start or a cancel, when the input cleaner
// may be deleting the job's keys (not confirmed in its code; seen at e5b4ad6 as well):
//   - 500 InternalError, which S3's clients retry as its message asks ("please try again"):
//     TestS3_PutAfterStartChangesNothing, versioned, 1 run in 30 under -race;
//   - 409 ExistingObjectIsDirectory, a code S3 itself has no use for on a plain key:
//     TestAPI_Backends/postgres+s3/Cancel, 2 runs in 100 at load 5.
func (e *Env) Upload(url string, data []byte) Response {
	e.T.Helper()
	for try := 1; ; try++ {
		r := e.Do("PUT", url, "", data, "Content-Type", "application/octet-stream")
		if e.Bucket == nil || try == 3 || !s3Transient(r) {
			return r
		}
		e.T.Logf("PUT to S3: %d %s, sent again (try %d)", r.Status, r.Body, try)
	}
}

// s3Transient reports whether r is one of the test S3 server's answers that Upload sends again.
func s3Transient(r Response) bool {
	body := string(r.Body)
	return r.Status == http.StatusInternalServerError && strings.Contains(body, "<Code>InternalError</Code>") ||
		r.Status == http.StatusConflict && strings.Contains(body, "<Code>ExistingObjectIsDirectory</Code>")
}

// Start starts a job.
func (e *Env) Start(key, id string) Response {
	e.T.Helper()
	return e.Do("POST", "/v1/jobs/"+id+"/start", key, nil)
}

// Get reads a job, waiting up to wait seconds for it to finish.
func (e *Env) Get(key, id string, wait int) Job {
	e.T.Helper()
	path := "/v1/jobs/" + id
	if wait > 0 {
		path += "?wait=" + itoa(wait)
	}
	r := e.Do("GET", path, key, nil)
	MustStatus(e.T, r, 200, "")
	var j Job
	r.JSON(e.T, &j)
	return j
}

// Convert runs reserve, upload, start and waits for the job to finish.
func (e *Env) Convert(key, input, target string, data []byte) Job {
	e.T.Helper()
	res := e.Create(key, input, target, int64(len(data)))
	MustStatus(e.T, e.Upload(res.UploadURL, data), 200, "")
	MustStatus(e.T, e.Start(key, res.Job.ID), 200, "")
	return e.WaitFinished(key, res.Job.ID)
}

// WaitFinished polls with ?wait= until the job is finished.
func (e *Env) WaitFinished(key, id string) Job {
	e.T.Helper()
	deadline := time.Now().Add(Scale(2 * time.Minute))
	for time.Now().Before(deadline) {
		j := e.Get(key, id, 30)
		if j.Status == "succeeded" || j.Status == "failed" || j.Status == "cancelled" {
			return j
		}
	}
	e.T.Fatalf("job %s did not finish", id)
	return Job{}
}

// NewAccount creates an account with a key through the admin API.
func (e *Env) NewAccount(capCents int64) (accountID, key string) {
	e.T.Helper()
	r := e.Do("POST", "/v1/admin/accounts", e.AdminToken, map[string]any{"name": "acct", "spend_cap_cents": capCents})
	MustStatus(e.T, r, 200, "")
	accountID = r.Map(e.T)["id"].(string)
	r = e.Do("POST", "/v1/admin/accounts/"+accountID+"/keys", e.AdminToken, nil)
	MustStatus(e.T, r, 200, "")
	return accountID, r.Map(e.T)["key"].(string)
}

// Account reads an account through the admin API.
func (e *Env) Account(id string) map[string]any {
	e.T.Helper()
	r := e.Do("GET", "/v1/admin/accounts/"+id, e.AdminToken, nil)
	MustStatus(e.T, r, 200, "")
	return r.Map(e.T)
}

// Sample reads a file under the repository's testdata/.
func Sample(t testing.TB, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(RepoRoot(t), "testdata", rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// RepoRoot finds the directory holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// Scale is testtime.Scale: d times the test-wide factor CONVSVC_TEST_TIMEOUT_SCALE, for the
// bounds a test waits within.
func Scale(d time.Duration) time.Duration { return testtime.Scale(d) }

// Cache is a Start option that turns the conversion cache on, as serve has it by default
// (docs/cache.md).
func Cache(c *service.Config) { c.CacheMaxBytes = service.DefaultCacheMaxBytes }
