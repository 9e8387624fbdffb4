package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// `admin accounts list` prints every account (the client follows the pages); with --limit it
// prints one page with has_more, and --starting-after continues it.
func TestCLI_AdminListsPage(t *testing.T) {
	e := testenv.Start(t)
	t.Setenv("CONVSVC_SERVER", e.URL)
	t.Setenv("CONVSVC_ADMIN_TOKEN", e.AdminToken)
	for range 24 {
		e.NewAccount(5)
	}
	out, err := run(t, "admin", "accounts", "list")
	if err != nil {
		t.Fatal(err)
	}
	var all []struct{ ID string }
	if err := json.Unmarshal([]byte(out), &all); err != nil || len(all) != 25 {
		t.Fatalf("accounts list: %d accounts (want 25, more than one page), err %v", len(all), err)
	}
	var page struct {
		Data    []struct{ ID string } `json:"data"`
		HasMore bool                  `json:"has_more"`
	}
	out, err = run(t, "admin", "accounts", "list", "--limit", "10", "--starting-after", all[9].ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &page); err != nil || len(page.Data) != 10 || !page.HasMore || page.Data[0].ID != all[10].ID {
		t.Fatalf("accounts list --limit 10 --starting-after: %s (err %v)", out, err)
	}
	out, err = run(t, "admin", "keys", "list", all[1].ID, "--limit", "1")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &page); err != nil || len(page.Data) != 1 || page.HasMore {
		t.Fatalf("keys list --limit 1: %s (err %v)", out, err)
	}
}
