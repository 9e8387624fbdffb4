package migratetest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/cli"
	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/internal/testing/tests3"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/webhook"
)

// hookReceiver is a real HTTP receiver of webhooks: /endpoint verifies with the endpoint's
// secret, /job with the account's signing secret (client.ReadWebhook), and records each
// delivery with the result of the check.
type hookReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	secrets map[string]string // path -> secret
	got     []hookDelivery
	arrived chan struct{}
}

type hookDelivery struct {
	path string
	ev   client.WebhookEvent
	err  error
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{secrets: map[string]string{}, arrived: make(chan struct{}, 1)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		secret := h.secrets[r.URL.Path]
		h.mu.Unlock()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		ev, err := client.ReadWebhook(r, secret)
		if err != nil {
			_ = json.Unmarshal(body, &ev) // for the report: which event failed the check
		}
		h.mu.Lock()
		h.got = append(h.got, hookDelivery{path: r.URL.Path, ev: ev, err: err})
		h.mu.Unlock()
		select {
		case h.arrived <- struct{}{}:
		default:
		}
		w.WriteHeader(http.StatusNoContent) // 2xx even when the check failed: the test reads got
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) setSecret(path, secret string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.secrets[path] = secret
}

func (h *hookReceiver) deliveries() []hookDelivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookDelivery(nil), h.got...)
}

// waitFor waits (up to two minutes) until a delivery of each wanted "path event-type job-id"
// arrived, and returns everything received.
func (h *hookReceiver) waitFor(t *testing.T, want ...string) []hookDelivery {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		got := h.deliveries()
		seen := map[string]bool{}
		for _, d := range got {
			if d.err != nil {
				t.Fatalf("delivery of %s (%s) to %s does not verify with the secret made before the move: %v", d.ev.ID, d.ev.Type, d.path, d.err)
			}
			seen[d.path+" "+d.ev.Type+" "+d.ev.Data.Job.ID] = true
		}
		missing := 0
		for _, w := range want {
			if !seen[w] {
				missing++
			}
		}
		if missing == 0 {
			return got
		}
		select {
		case <-h.arrived:
		case <-time.After(time.Second):
		case <-deadline:
			t.Fatalf("after two minutes the receiver has %d deliveries %+v; want %q", len(got), got, want)
		}
	}
}

// testMigrateWebhooks: a data dir with a webhook endpoint, the account's signing secret, a
// created job (with its upload) naming a webhook_url, and a cancelled job whose two
// deliveries are pending (one of them claimed by a dispatcher that is gone). After migrating
// and serving on PostgreSQL + S3, the pending deliveries are sent, the created job converts
// and its job.succeeded goes to the endpoint and to its webhook_url, every one signed with
// the secret made before the move.
func testMigrateWebhooks(t *testing.T) {
	ctx := context.Background()
	recv := newHookReceiver(t)
	dir := filepath.Join(t.TempDir(), "data")
	var acct, key, endpointID, endpointSecret, signingSecret, previousSecret, created string
	t.Run("source service", func(t *testing.T) {
		e := testenv.Start(t, func(c *service.Config) {
			c.DataDir, c.Database, c.ObjectStorage = dir, "", ""
			c.WebhookAllowPrivate = true
		})
		acct, key = e.AccountID, e.Key
		r := e.Do("POST", "/v1/admin/accounts/"+acct+"/webhooks", e.AdminToken, map[string]any{"url": recv.srv.URL + "/endpoint"})
		testenv.MustStatus(t, r, 200, "")
		m := r.Map(t)
		endpointID, endpointSecret = m["id"].(string), m["secret"].(string)
		// Rotated once: the replaced secret still signs (its overlap) and moves with the account.
		r = e.Do("POST", "/v1/admin/accounts/"+acct+"/webhook-secret", e.AdminToken, nil)
		testenv.MustStatus(t, r, 200, "")
		previousSecret = r.Map(t)["secret"].(string)
		r = e.Do("POST", "/v1/admin/accounts/"+acct+"/webhook-secret", e.AdminToken, nil)
		testenv.MustStatus(t, r, 200, "")
		signingSecret = r.Map(t)["secret"].(string)
		png := testenv.NoisePNG(t, 9, 9)
		r = e.Do("POST", "/v1/jobs", key, map[string]any{"input_format": "png", "target_format": "jpeg",
			"input_bytes": len(png), "webhook_url": recv.srv.URL + "/job"})
		testenv.MustStatus(t, r, 200, "")
		var res testenv.Reservation
		r.JSON(t, &res)
		testenv.MustStatus(t, e.Upload(res.UploadURL, png), 200, "")
		created = res.Job.ID
	})
	if t.Failed() {
		t.FailNow()
	}
	recv.setSecret("/endpoint", endpointSecret)
	recv.setSecret("/job", signingSecret)

	// With the service stopped: a job naming the webhook_url is cancelled, which records a
	// pending delivery to the endpoint and one to the webhook_url; a dispatcher claims one
	// (for an hour) and is gone before sending it.
	st, err := store.Open(filepath.Join(dir, "convsvc.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	job, _, err := st.CreateJob(store.CreateJobParams{AccountID: acct, InputFormat: "png", TargetFormat: "jpeg", InputBytes: 100,
		WebhookURL: recv.srv.URL + "/job"}, func(store.Job) (store.Response, error) { return store.Response{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	cancelled := job.ID
	if _, err := st.CancelJob(acct, cancelled); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.ClaimWebhookDeliveries(store.WebhookClaim{Limit: 1, Hold: time.Hour})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %d deliveries, %v; want 1", len(claimed), err)
	}
	st.Close()
	if got := recv.deliveries(); len(got) != 0 {
		t.Fatalf("the receiver got %d deliveries before the move, want none: %+v", len(got), got)
	}

	dbURL := testpg.NewDatabase(t)
	bk := tests3.NewBucket(t, tests3.Options{})
	t.Setenv("AWS_ACCESS_KEY_ID", bk.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", bk.SecretKey)
	var out bytes.Buffer
	root := cli.NewRootCommand()
	root.SetArgs([]string{"admin", "migrate", "--data", dir, "--database", dbURL,
		"--object-storage", "s3://" + bk.Name + "/convsvc", "--s3-endpoint", bk.Endpoint, "--s3-region", bk.Region})
	root.SetOut(&out)
	root.SetErr(&out)
	if err := root.Execute(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out.String())
	}
	want := "database: copied webhooks: 1 endpoint with its secret, 1 signing secret, 1 job webhook_url, 2 pending deliveries"
	if !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
	// Again with --replace-target: the webhook rows already there are replaced, not added to
	// (and do not block deleting the accounts they belong to).
	root = cli.NewRootCommand()
	root.SetArgs([]string{"admin", "migrate", "--data", dir, "--database", dbURL, "--replace-target",
		"--object-storage", "s3://" + bk.Name + "/convsvc", "--s3-endpoint", bk.Endpoint, "--s3-region", bk.Region})
	out.Reset()
	root.SetOut(&out)
	root.SetErr(&out)
	if err := root.Execute(); err != nil || !strings.Contains(out.String(), want) {
		t.Fatalf("migrate --replace-target: %v\n%s", err, out.String())
	}

	pg, err := pgstore.Open(ctx, dbURL, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eps, err := pg.WebhookEndpoints(acct)
	if err != nil || len(eps) != 1 || eps[0].ID != endpointID || eps[0].Secret != endpointSecret || eps[0].URL != recv.srv.URL+"/endpoint" {
		t.Errorf("endpoints on the target: %+v, %v; want %s with its secret", eps, err, endpointID)
	}
	if rec, err := pg.WebhookSigningSecret(acct); err != nil || rec.Secret != signingSecret || rec.PreviousSecret != previousSecret ||
		rec.PreviousExpiresAt == nil || !rec.PreviousExpiresAt.Equal(rec.CreatedAt.Add(webhook.SecretOverlap)) {
		t.Errorf("signing secret on the target: %v, equal %v, previous equal %v until %v; want the ones made before the move, the old one for %s",
			err, rec.Secret == signingSecret, rec.PreviousSecret == previousSecret, rec.PreviousExpiresAt, webhook.SecretOverlap)
	}
	if url, err := pg.JobWebhookURL(created); err != nil || url != recv.srv.URL+"/job" {
		t.Errorf("webhook_url of %s on the target: %q, %v", created, url, err)
	}
	pg.Close()

	e := testenv.Start(t, func(c *service.Config) {
		c.Database = dbURL
		c.AdminToken = "cs_admin_migrated_webhooks"
		c.ObjectStorage = "s3://" + bk.Name + "/convsvc"
		c.S3 = service.S3Config{Endpoint: bk.Endpoint, Region: bk.Region, AccessKey: bk.AccessKey, SecretKey: bk.SecretKey}
		c.WebhookAllowPrivate = true
		c.WebhookPoll = 200 * time.Millisecond
	})
	// The pending deliveries (the claimed one too) are sent by the new server.
	recv.waitFor(t, "/endpoint job.cancelled "+cancelled, "/job job.cancelled "+cancelled)
	// The created job converts there; its event goes to the endpoint and to its webhook_url.
	testenv.MustStatus(t, e.Start(key, created), 200, "")
	if j := e.Get(key, created, 60); j.Status != "succeeded" {
		t.Fatalf("migrated job %s: %s %v", created, j.Status, j.ErrorCode)
	}
	got := recv.waitFor(t, "/endpoint job.succeeded "+created, "/job job.succeeded "+created)
	for _, d := range got {
		if d.err != nil {
			t.Errorf("delivery of %s to %s does not verify with the secret made before the move: %v", d.ev.ID, d.path, d.err)
		}
	}
}
