package cli_test

import (
	"strings"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// TestCLI_AccountQueueLimits: admin accounts update sets and lifts max_running and max_queued,
// and refuses 0, negative and non-numbers before asking the server.
func TestCLI_AccountQueueLimits(t *testing.T) {
	e := testenv.Start(t)
	t.Setenv("CONVSVC_SERVER", e.URL)
	t.Setenv("CONVSVC_ADMIN_TOKEN", e.AdminToken)
	acct, _ := e.NewAccount(10)
	out, err := run(t, "admin", "accounts", "update", acct, "--max-running", "3", "--max-queued", "50", "--spend-cap-cents", "20")
	if err != nil || !strings.Contains(out, `"max_running": 3`) || !strings.Contains(out, `"max_queued": 50`) {
		t.Fatalf("update: %v %s", err, out)
	}
	if m := e.Account(acct); m["max_running"] != 3.0 || m["max_queued"] != 50.0 || m["spend_cap_cents"] != 20.0 {
		t.Fatalf("account %v", m)
	}
	for _, bad := range []string{"0", "-2", "many", "1.5"} {
		if _, err := run(t, "admin", "accounts", "update", acct, "--max-queued", bad); err == nil || !strings.Contains(err.Error(), "--max-queued") {
			t.Fatalf("--max-queued %s: %v", bad, err)
		}
	}
	if _, err := run(t, "admin", "accounts", "update", acct, "--max-running", "unlimited"); err != nil {
		t.Fatal(err)
	}
	if m := e.Account(acct); m["max_running"] != nil || m["max_queued"] != 50.0 {
		t.Fatalf("after --max-running unlimited: %v", m)
	}
}
