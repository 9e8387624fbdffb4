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
