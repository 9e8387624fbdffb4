package cli_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// docs/webhooks.md's admin commands (`convsvc admin webhooks add ...` and `... deliveries ...
// --state failed`) run as written, with the example account and URL replaced by a real account
// and a loopback receiver (the service allowing private destinations, as tests do): add prints
// the endpoint with its secret, shown once, and deliveries prints the account's failed
// deliveries (none) as JSON.
func TestDocs_WebhooksAdminCommands(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "webhooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "\nconvsvc admin webhooks add ")
	if i < 0 {
		t.Fatal("docs/webhooks.md shows no `convsvc admin webhooks add` command")
	}
	block, _, _ := strings.Cut(string(b)[i+1:], "```")
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(recv.Close)
	e := testenv.Start(t, func(c *service.Config) { c.WebhookAllowPrivate = true })
	t.Setenv("CONVSVC_SERVER", e.URL)
	t.Setenv("CONVSVC_ADMIN_TOKEN", e.AdminToken)
	var ran []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		command, _, _ := strings.Cut(line, "#")
		args := strings.Fields(command)
		if len(args) < 3 || args[0] != "convsvc" {
			t.Fatalf("not a convsvc command: %q", line)
		}
		for j, a := range args {
			switch a {
			case "acct_123":
				args[j] = e.AccountID
			case "https://hooks.example.com/convsvc":
				args[j] = recv.URL + "/convsvc"
			}
		}
		out, err := run(t, args[1:]...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		switch strings.Join(args[1:4], " ") {
		case "admin webhooks add":
			var ep struct {
				ID, URL, Secret string
			}
			if err := json.Unmarshal([]byte(out), &ep); err != nil || ep.URL != recv.URL+"/convsvc" || ep.Secret == "" || ep.ID == "" {
				t.Errorf("%s printed %s (%v): want the endpoint with its secret", line, out, err)
			}
		case "admin webhooks deliveries":
			var v any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Errorf("%s printed %s, not JSON: %v", line, out, err)
			}
		}
		ran = append(ran, strings.Join(args[1:4], " "))
	}
	if strings.Join(ran, ", ") != "admin webhooks add, admin webhooks deliveries" {
		t.Errorf("ran %v, want add then deliveries", ran)
	}
}

// docs/webhooks.md's commands for an account's own key (`convsvc webhooks add|list|rm|
// rotate-secret|secret`) run as written against a real service, with the example URL replaced
// by a loopback receiver and the example endpoint id by the one add made: add prints the
// endpoint with its secret, rm removes it, rotate-secret prints a new secret once and secret
// then shows its prefix only.
func TestDocs_WebhooksKeyCommands(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "webhooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "\nexport CONVSVC_URL=https://convsvc.example.com CONVSVC_KEY=cs_live_...\nconvsvc webhooks add ")
	if i < 0 {
		t.Fatal("docs/webhooks.md shows no `convsvc webhooks add` block")
	}
	block, _, _ := strings.Cut(string(b)[i+1:], "```")
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(recv.Close)
	e := testenv.Start(t, func(c *service.Config) { c.WebhookAllowPrivate = true })
	t.Setenv("CONVSVC_URL", e.URL)
	t.Setenv("CONVSVC_KEY", e.Key)
	var ran []string
	var endpointID, secret string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n")[1:] {
		command, _, _ := strings.Cut(line, "#")
		args := strings.Fields(command)
		if len(args) < 2 || args[0] != "convsvc" || args[1] != "webhooks" {
			t.Fatalf("not a convsvc webhooks command: %q", line)
		}
		for j, a := range args {
			switch a {
			case "https://hooks.example.com/convsvc":
				args[j] = recv.URL + "/convsvc"
			case "whk_0123456789abcdef":
				args[j] = endpointID
			}
		}
		out, err := run(t, args[1:]...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		var v struct {
			ID, URL, Secret string
			SecretPrefix    *string `json:"secret_prefix"`
			Set             bool
		}
		if args[2] != "list" {
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("%s printed %s, not JSON: %v", line, out, err)
			}
		}
		switch args[2] {
		case "add":
			if v.URL != recv.URL+"/convsvc" || !strings.HasPrefix(v.Secret, "whsec_") || v.ID == "" {
				t.Errorf("%s printed %s: want the endpoint with its secret", line, out)
			}
			endpointID = v.ID
		case "list":
			if !strings.Contains(out, endpointID) || strings.Contains(out, "whsec_") && !strings.Contains(out, "secret_prefix") {
				t.Errorf("%s printed %s", line, out)
			}
		case "rotate":
			if v.ID != endpointID || !strings.HasPrefix(v.Secret, "whsec_") {
				t.Errorf("%s printed %s: want the endpoint with its new secret", line, out)
			}
		case "rm":
			if v.ID != endpointID {
				t.Errorf("%s printed %s", line, out)
			}
		case "rotate-secret":
			if !strings.HasPrefix(v.Secret, "whsec_") {
				t.Errorf("%s printed %s: want the new secret", line, out)
			}
			secret = v.Secret
		case "secret":
			if !v.Set || v.SecretPrefix == nil || !strings.HasPrefix(secret, *v.SecretPrefix) || strings.Contains(out, secret) {
				t.Errorf("%s printed %s: want the prefix of %s only", line, out, secret)
			}
		}
		ran = append(ran, args[2])
	}
	if strings.Join(ran, " ") != "add list rotate rm rotate-secret secret" {
		t.Errorf("ran %v", ran)
	}
	// Without a key the command says how to give one.
	t.Setenv("CONVSVC_KEY", "")
	if out, err := run(t, "webhooks", "list"); err == nil || !strings.Contains(out+err.Error(), "--key") {
		t.Errorf("webhooks list without a key: %v\n%s", err, out)
	}
}
