package cli_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/cli"
	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// run executes the root command in-process and returns its stdout.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := cli.NewRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestCLI_AdminCommandsWithEnvironmentTwins(t *testing.T) {
	e := testenv.Start(t)
	t.Setenv("CONVSVC_SERVER", e.URL)
	t.Setenv("CONVSVC_ADMIN_TOKEN", e.AdminToken)
	out, err := run(t, "admin", "accounts", "create", "--name", "acme", "--spend-cap-cents", "42")
	if err != nil {
		t.Fatal(err)
	}
	var acct struct {
		ID            string `json:"id"`
		SpendCapCents int64  `json:"spend_cap_cents"`
	}
	if err := json.Unmarshal([]byte(out), &acct); err != nil || acct.SpendCapCents != 42 {
		t.Fatalf("%v %s", err, out)
	}
	out, err = run(t, "admin", "keys", "create", acct.ID)
	if err != nil || !strings.Contains(out, `"key": "cs_live_`) {
		t.Fatalf("keys create: %v %s", err, out)
	}
	if _, err := run(t, "admin", "accounts", "update", acct.ID, "--spend-cap-cents", "7"); err != nil {
		t.Fatal(err)
	}
	if got := e.Account(acct.ID)["spend_cap_cents"]; got != 7.0 {
		t.Fatalf("cap %v", got)
	}
	// A wrong token from the _FILE twin is the API's 403, printed with its code.
	t.Setenv("CONVSVC_ADMIN_TOKEN", "")
	_, err = run(t, "admin", "accounts", "list", "--admin-token", "wrong")
	if err == nil || !strings.Contains(err.Error(), "unauthorized") {
		t.Fatalf("wrong token: %v", err)
	}
}

func TestCLI_BadEnvironmentValueIsAnError(t *testing.T) {
	t.Setenv("CONVSVC_WORKERS", "many")
	_, err := run(t, "serve", "--data", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "CONVSVC_WORKERS") {
		t.Fatalf("got %v", err)
	}
}

func TestCLI_Formats(t *testing.T) {
	out, err := run(t, "formats")
	if err != nil || !strings.Contains(out, "png") || !strings.Contains(out, "CONVERTS TO") {
		t.Fatalf("%v %s", err, out)
	}
	out, err = run(t, "formats", "webp")
	if err != nil || !strings.Contains(out, "converts to:") || !strings.Contains(out, "png") {
		t.Fatalf("%v %s", err, out)
	}
	if _, err := run(t, "formats", "nope"); err == nil {
		t.Fatal("unknown format accepted")
	}
}
