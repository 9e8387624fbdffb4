package httpapi_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/webhook"
)

type signingSecretState struct {
	AccountID            string     `json:"account_id"`
	Set                  bool       `json:"set"`
	Secret               string     `json:"secret"`
	SecretPrefix         *string    `json:"secret_prefix"`
	CreatedAt            *time.Time `json:"created_at"`
	PreviousSecretPrefix *string    `json:"previous_secret_prefix"`
	PreviousExpiresAt    *time.Time `json:"previous_expires_at"`
}

// TestSelfWebhooks_ScopedToKeysAccount runs on both stores: a key registers, lists and removes
// its own account's endpoints (the admin API sees the same ones), and another account's key
// neither sees nor removes them (404 not_found, as for another account's job).
func TestSelfWebhooks_ScopedToKeysAccount(t *testing.T) {
	for _, backend := range []string{"bbolt", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			e := startOn(t, backend, fastWebhooks)
			acct, key := e.NewAccount(10)
			other, otherKey := e.NewAccount(10)
			recv := newReceiver(t, nil)
			r := e.Do("POST", "/v1/webhooks", key, map[string]string{"url": recv.URL + "/hook"})
			must(t, r, 200, "")
			var ep endpointView
			r.JSON(t, &ep)
			if !strings.HasPrefix(ep.Secret, "whsec_") || !strings.HasPrefix(ep.ID, "whk_") || r.Header.Get("RateLimit-Limit") == "" {
				t.Fatalf("created %s (headers %v)", r.Body, r.Header)
			}
			if got := r.Map(t)["account_id"]; got != acct {
				t.Fatalf("endpoint of %v, want %s", got, acct)
			}
			// The key's list and the admin's list show it, without its secret.
			for _, l := range []testenv.Response{e.Do("GET", "/v1/webhooks", key, nil), e.Do("GET", "/v1/admin/accounts/"+acct+"/webhooks", e.AdminToken, nil)} {
				must(t, l, 200, "")
				if !strings.Contains(string(l.Body), ep.ID) || strings.Contains(string(l.Body), ep.Secret) {
					t.Fatalf("list %s", l.Body)
				}
			}
			// Another account's key: its own list is empty, and the endpoint is not found.
			r = e.Do("GET", "/v1/webhooks", otherKey, nil)
			must(t, r, 200, "")
			if strings.Contains(string(r.Body), ep.ID) || string(r.Body) != `{"data":[],"has_more":false}`+"\n" && !strings.Contains(string(r.Body), `"data":[]`) {
				t.Fatalf("another account's list %s", r.Body)
			}
			must(t, e.Do("DELETE", "/v1/webhooks/"+ep.ID, otherKey, nil), 404, "not_found")
			if eps := e.Do("GET", "/v1/admin/accounts/"+acct+"/webhooks", e.AdminToken, nil); !strings.Contains(string(eps.Body), ep.ID) {
				t.Fatalf("another account's delete removed the endpoint: %s", eps.Body)
			}
			// The other account's rotation does not touch this account's secret.
			must(t, e.Do("POST", "/v1/webhook-secret", otherKey, nil), 200, "")
			var st signingSecretState
			r = e.Do("GET", "/v1/webhook-secret", key, nil)
			must(t, r, 200, "")
			r.JSON(t, &st)
			if st.Set || st.AccountID != acct || st.SecretPrefix != nil {
				t.Fatalf("secret of an account that made none: %s", r.Body)
			}

			// Events reach the endpoint the key registered, signed with its secret.
			job := e.Create(key, "png", "jpeg", 10)
			must(t, e.Do("POST", "/v1/jobs/"+job.Job.ID+"/cancel", key, nil), 200, "")
			checkEvent(t, e, key, ep.Secret, recv.wait(t, 1)[0], job.Job.ID, "job.cancelled")

			// The endpoint's own secret rotates: not by another account; by this one with the
			// old secret still signing beside the new during the overlap.
			must(t, e.Do("POST", "/v1/webhooks/"+ep.ID+"/rotate-secret", otherKey, nil), 404, "not_found")
			r = e.Do("POST", "/v1/webhooks/"+ep.ID+"/rotate-secret", key, nil)
			must(t, r, 200, "")
			var rotated struct {
				endpointView
				PreviousSecretPrefix *string    `json:"previous_secret_prefix"`
				PreviousExpiresAt    *time.Time `json:"previous_expires_at"`
			}
			r.JSON(t, &rotated)
			if rotated.ID != ep.ID || !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.Secret == ep.Secret ||
				rotated.PreviousSecretPrefix == nil || *rotated.PreviousSecretPrefix != ep.SecretPrefix || rotated.PreviousExpiresAt == nil {
				t.Fatalf("rotated endpoint %s", r.Body)
			}
			job2 := e.Create(key, "png", "jpeg", 10)
			must(t, e.Do("POST", "/v1/jobs/"+job2.Job.ID+"/cancel", key, nil), 200, "")
			got := recv.wait(t, 2)[1]
			if n := strings.Count(got.header.Get(webhook.SignatureHeader), "v1="); n != 2 {
				t.Fatalf("delivery after the endpoint's rotation has %d v1 values, want 2", n)
			}
			checkEvent(t, e, key, rotated.Secret, got, job2.Job.ID, "job.cancelled")
			checkEvent(t, e, key, ep.Secret, got, job2.Job.ID, "job.cancelled")

			// The operator rotates it too, on its own account's path only.
			must(t, e.Do("POST", "/v1/admin/accounts/"+other+"/webhooks/"+ep.ID+"/rotate-secret", e.AdminToken, nil), 404, "not_found")
			must(t, e.Do("POST", "/v1/admin/accounts/"+acct+"/webhooks/"+ep.ID+"/rotate-secret", key, nil), 403, "unauthorized")
			must(t, e.Do("POST", "/v1/admin/accounts/"+acct+"/webhooks/"+ep.ID+"/rotate-secret", e.AdminToken, nil), 200, "")

			r = e.Do("DELETE", "/v1/webhooks/"+ep.ID, key, nil)
			must(t, r, 200, "")
			must(t, e.Do("DELETE", "/v1/webhooks/"+ep.ID, key, nil), 404, "not_found")
			if r := e.Do("GET", "/v1/webhooks", key, nil); strings.Contains(string(r.Body), ep.ID) {
				t.Fatalf("removed endpoint still listed: %s", r.Body)
			}
		})
	}
}

// TestSelfWebhooks_HostileInput: without a key, with a bad one, bad JSON, unknown fields, a
// private or malformed URL, a wrong media type and an oversized body, nothing is stored; the
// 17th endpoint is refused with a message that says what to do.
func TestSelfWebhooks_HostileInput(t *testing.T) {
	e := testenv.Start(t) // no --webhook-allow-private: the URL guard applies as for the admin
	acct, key := e.NewAccount(10)
	for _, ep := range []struct{ method, path string }{
		{"POST", "/v1/webhooks"}, {"GET", "/v1/webhooks"}, {"DELETE", "/v1/webhooks/whk_x"},
		{"GET", "/v1/webhook-secret"}, {"POST", "/v1/webhook-secret"},
	} {
		must(t, e.Do(ep.method, ep.path, "", nil), 401, "unauthorized")
		must(t, e.Do(ep.method, ep.path, "cs_live_notakey", nil), 403, "unauthorized")
		must(t, e.Do(ep.method, ep.path, e.AdminToken, nil), 403, "unauthorized")
	}
	for _, body := range []any{`{`, `[]`, `{}`, `{"url":1}`, `{"url":"https://93.184.215.14/","secret":"whsec_mine"}`, `null`} {
		must(t, e.Do("POST", "/v1/webhooks", key, body), 400, "invalid_request")
	}
	for _, url := range []string{"http://127.0.0.1:9/hook", "http://localhost/", "http://10.0.0.1/", "http://169.254.169.254/latest/meta-data",
		"http://[::1]/", "http://100.64.0.1/", "ftp://example.com/", "https://user:pw@93.184.215.14/", "", "not a url",
		"https://93.184.215.14/" + strings.Repeat("a", 2100)} {
		r := e.Do("POST", "/v1/webhooks", key, map[string]string{"url": url})
		must(t, r, 400, "invalid_request")
		if strings.Contains(string(r.Body), "127.0.0.1") && !strings.Contains(url, "127.0.0.1") {
			t.Fatalf("refusal tells what a name resolved to: %s", r.Body)
		}
	}
	must(t, e.Do("POST", "/v1/webhooks", key, `{"url":"https://93.184.215.14/"}`, "Content-Type", "text/plain"), 415, "unsupported_media_type")
	must(t, e.Do("POST", "/v1/webhooks", key, `{"url":"`+strings.Repeat("a", 70000)+`"}`), 413, "request_too_large")
	if r := e.Do("GET", "/v1/webhooks", key, nil); strings.Contains(string(r.Body), "whk_") {
		t.Fatalf("a refused registration stored an endpoint: %s", r.Body)
	}
	// The cap: store.MaxWebhookEndpoints, then 400 naming the way out.
	for i := range store.MaxWebhookEndpoints {
		must(t, e.Do("POST", "/v1/webhooks", key, map[string]string{"url": "https://93.184.215.14/h" + strconv.Itoa(i)}), 200, "")
	}
	r := e.Do("POST", "/v1/webhooks", key, map[string]string{"url": "https://93.184.215.14/one-more"})
	must(t, r, 400, "invalid_request")
	if !strings.Contains(string(r.Body), "remove one") {
		t.Fatalf("cap refusal does not say what to do: %s", r.Body)
	}
	// The admin registration has the same cap.
	must(t, e.Do("POST", "/v1/admin/accounts/"+acct+"/webhooks", e.AdminToken, map[string]string{"url": "https://93.184.215.14/admin"}), 400, "invalid_request")
	must(t, e.Do("DELETE", "/v1/webhooks/whk_nope", key, nil), 404, "not_found")
	must(t, e.Do("DELETE", "/v1/webhooks/"+strings.Repeat("x", 3000), key, nil), 404, "not_found")
}

// TestSelfWebhooks_KeyRateLimit: registering, removing and rotating spend the key's write
// budget, shared with creates, starts and cancels; the request over it is 429 with
// Retry-After and changes nothing. Reads have their own budget and still answer.
func TestSelfWebhooks_KeyRateLimit(t *testing.T) {
	e := testenv.Start(t, func(c *service.Config) {
		c.WriteLimit = 3
		c.RateWindow = time.Hour
	})
	_, key := e.NewAccount(10)
	must(t, e.Do("POST", "/v1/webhooks", key, map[string]string{"url": "https://93.184.215.14/a"}), 200, "")
	must(t, e.Do("POST", "/v1/webhook-secret", key, nil), 200, "")
	must(t, e.Do("POST", "/v1/webhooks", key, `{bad json`), 400, "invalid_request") // a refused write counts too
	for _, w := range []struct {
		method, path string
		body         any
	}{{"POST", "/v1/webhooks", map[string]string{"url": "https://93.184.215.14/b"}}, {"POST", "/v1/webhook-secret", nil},
		{"DELETE", "/v1/webhooks/whk_x", nil}, {"POST", "/v1/jobs", map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": 1}}} {
		r := e.Do(w.method, w.path, key, w.body)
		must(t, r, 429, "rate_limited")
		if r.Header.Get("Retry-After") == "" {
			t.Fatalf("%s %s: 429 without Retry-After", w.method, w.path)
		}
	}
	r := e.Do("GET", "/v1/webhooks", key, nil)
	must(t, r, 200, "")
	if n := strings.Count(string(r.Body), "whk_"); n != 1 {
		t.Fatalf("%d endpoints after a refused registration, want 1: %s", n, r.Body)
	}
	must(t, e.Do("GET", "/v1/webhook-secret", key, nil), 200, "")
}

// TestSelfWebhooks_SecretRotation runs on both stores: the key makes its account's signing
// secret, GET shows only its prefix, a rotation shows the replaced one's prefix and the end
// of its overlap (24 h), and a job's webhook_url delivery made during the overlap carries two
// v1= values, one per secret, each verifying.
func TestSelfWebhooks_SecretRotation(t *testing.T) {
	for _, backend := range []string{"bbolt", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			e := startOn(t, backend, fastWebhooks)
			acct, key := e.NewAccount(10)
			rotate := func() signingSecretState {
				t.Helper()
				r := e.Do("POST", "/v1/webhook-secret", key, nil)
				must(t, r, 200, "")
				var st signingSecretState
				r.JSON(t, &st)
				if !st.Set || st.AccountID != acct || !strings.HasPrefix(st.Secret, "whsec_") || st.SecretPrefix == nil ||
					!strings.HasPrefix(st.Secret, *st.SecretPrefix) || st.CreatedAt == nil {
					t.Fatalf("rotate: %s", r.Body)
				}
				return st
			}
			first := rotate()
			if first.PreviousSecretPrefix != nil || first.PreviousExpiresAt != nil {
				t.Fatalf("first secret has a previous one: %+v", first)
			}
			second := rotate()
			if second.PreviousSecretPrefix == nil || *second.PreviousSecretPrefix != *first.SecretPrefix || second.PreviousExpiresAt == nil ||
				!second.PreviousExpiresAt.Equal(second.CreatedAt.Add(webhook.SecretOverlap)) {
				t.Fatalf("rotation: %+v, want the first secret's prefix until created_at + %s", second, webhook.SecretOverlap)
			}
			r := e.Do("GET", "/v1/webhook-secret", key, nil)
			must(t, r, 200, "")
			if strings.Contains(string(r.Body), second.Secret) || strings.Contains(string(r.Body), first.Secret) {
				t.Fatalf("GET shows a secret: %s", r.Body)
			}
			var st signingSecretState
			r.JSON(t, &st)
			if !st.Set || *st.SecretPrefix != *second.SecretPrefix || st.PreviousExpiresAt == nil || !st.PreviousExpiresAt.Equal(*second.PreviousExpiresAt) {
				t.Fatalf("GET after rotation: %s", r.Body)
			}

			own := newReceiver(t, nil)
			res := e.Do("POST", "/v1/jobs", key, map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": 10, "webhook_url": own.URL + "/job"})
			must(t, res, 200, "")
			var resv testenv.Reservation
			res.JSON(t, &resv)
			must(t, e.Do("POST", "/v1/jobs/"+resv.Job.ID+"/cancel", key, nil), 200, "")
			got := own.wait(t, 1)[0]
			sig := got.header.Get(webhook.SignatureHeader)
			if strings.Count(sig, "v1=") != 2 {
				t.Fatalf("delivery during the overlap signed %q, want two v1 values", sig)
			}
			checkEvent(t, e, key, second.Secret, got, resv.Job.ID, "job.cancelled")
			checkEvent(t, e, key, first.Secret, got, resv.Job.ID, "job.cancelled")
		})
	}
}

// TestSelfWebhooks_OverlapConfigured: serve --webhook-secret-overlap sets how long the replaced
// secret signs; the rotation shows its end.
func TestSelfWebhooks_OverlapConfigured(t *testing.T) {
	e := testenv.Start(t, func(c *service.Config) { c.WebhookSecretOverlap = 90 * time.Minute })
	_, key := e.NewAccount(10)
	must(t, e.Do("POST", "/v1/webhook-secret", key, nil), 200, "")
	r := e.Do("POST", "/v1/webhook-secret", key, nil)
	must(t, r, 200, "")
	var st signingSecretState
	r.JSON(t, &st)
	if st.CreatedAt == nil || st.PreviousExpiresAt == nil || !st.PreviousExpiresAt.Equal(st.CreatedAt.Add(90*time.Minute)) {
		t.Fatalf("rotation with a 90 min overlap: %s", r.Body)
	}
}
