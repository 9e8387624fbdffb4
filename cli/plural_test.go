package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestPlural_CountsOfOne: every count migrate's report prints reads right at 1 and at 2.
func TestPlural_CountsOfOne(t *testing.T) {
	if got := plural(1, "month", "months") + ", " + plural(0, "month", "months") + ", " + plural(int64(2), "byte", "bytes"); got != "1 month, 0 months, 2 bytes" {
		t.Fatalf("plural: %q", got)
	}
	report := func(n int) string {
		var out, errOut bytes.Buffer
		cmd := &cobra.Command{}
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		missing := make([]string, n)
		for i := range missing {
			missing[i] = "job_x"
		}
		printMigrateReport(cmd, &migrateOptions{database: "postgres://x", objectStorage: "s3://b"}, MigrateReport{
			Accounts: n, Keys: n, RevokedKeys: n, Months: n, UnfinishedJobs: n, Requeued: n, Inputs: n, InputBytes: int64(n),
			FinishedJobs: n, PurgedAdded: int64(n), WebhookEndpoints: n, WebhookSigningSecrets: n, JobWebhooks: n,
			PendingDeliveries: n, DeliveryHistory: n, Presets: n, MissingInputs: missing})
		return out.String() + errOut.String()
	}
	want1 := "database: copied 1 account, 1 key (1 revoked), 1 month of spend, 1 unfinished job (1 of them was running: queued again)\n" +
		"database: not copied: 1 finished job (1 success kept in the ledger as purged)\n" +
		"database: copied webhooks: 1 endpoint with its secret, 1 signing secret, 1 job webhook_url, 1 pending delivery\n" +
		"database: copied 1 preset\n" +
		"database: not copied: 1 delivered or failed webhook delivery (history)\n" +
		"database: ledger verified\n" +
		"object storage: copied 1 input file (1 byte), each read back and compared by SHA-256\n" +
		"warning: 1 started job had no input file in the data dir (they will fail when run): job_x\n"
	if got := report(1); got != want1 {
		t.Errorf("report of ones:\n%s\nwant\n%s", got, want1)
	}
	if got := report(2); !strings.Contains(got, "copied 2 accounts, 2 keys (2 revoked), 2 months of spend, 2 unfinished jobs (2 of them were running") ||
		!strings.Contains(got, "2 endpoints with their secrets") || !strings.Contains(got, "warning: 2 started jobs had no input file") {
		t.Errorf("report of twos:\n%s", got)
	}
}
