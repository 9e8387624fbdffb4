package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/convsvc/convsvc/service"
)

// migrateOptions are the flags of `convsvc admin migrate`.
type migrateOptions struct {
	database      string
	objectStorage string
	s3Endpoint    string
	s3Region      string
	s3PathStyle   string
	replace       bool
}

func newAdminMigrateCommand(o *adminOptions) *cobra.Command {
	m := &migrateOptions{}
	cmd := &cobra.Command{
		Use:   "migrate --database postgres://... and/or --object-storage s3://BUCKET/PREFIX",
		Short: "Copy a stopped server's data dir into PostgreSQL and/or S3 (moving up)",
		Long: "Copy the data dir given by --data (stop the server first: its lock on the database file\n" +
			"is checked) into PostgreSQL, S3-compatible object storage, or both: accounts, hashed keys,\n" +
			"monthly spend history, and unfinished jobs with their input files (running jobs go back\n" +
			"to the queue). Finished jobs and outputs are not copied; their successes stay in the\n" +
			"ledger. Webhooks move too: endpoints with their secrets (receivers keep verifying with\n" +
			"the secret they have), the accounts' signing secrets, the webhook_url of the jobs copied,\n" +
			"and pending deliveries (sent by the new server); delivered and failed deliveries (the\n" +
			"history) are not copied.\n" +
			"A target that already holds data is refused unless --replace-target is given.\n" +
			"The database part is one transaction, checked before it commits. The database password\n" +
			"and S3 settings are read as serve reads them: CONVSVC_DATABASE_PASSWORD_FILE, the region\n" +
			"from AWS_REGION, credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or their\n" +
			"_FILE twins), else the AWS SDK's default chain (profiles, web identity, roles).\n" +
			"See docs/scaling.md, \"Moving up: convsvc admin migrate\".",
		Example: "  convsvc admin migrate --data /var/lib/convsvc \\\n" +
			"    --database postgres://convsvc@db/convsvc \\\n" +
			"    --object-storage s3://convsvc-files/prod --s3-endpoint http://minio:9000 --s3-region us-east-1",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			database, err := withDatabasePassword(m.database)
			if err != nil {
				return err
			}
			opts := MigrateOptions{DataDir: o.dataDir, DatabaseURL: database, Replace: m.replace}
			if m.objectStorage != "" {
				if _, _, err := parseObjectStorage(m.objectStorage); err != nil {
					return err
				}
				s3 := service.S3Config{Endpoint: m.s3Endpoint, Region: m.s3Region}
				if s3.PathStyle, err = parsePathStyle(m.s3PathStyle); err != nil {
					return fmt.Errorf("--s3-path-style %w", err)
				}
				if err := completeS3Config(m.objectStorage, &s3); err != nil {
					return err
				}
				so, err := service.S3StoreOptions(m.objectStorage, s3)
				if err != nil {
					return err
				}
				opts.ObjectStorage = &so
			}
			rep, err := Migrate(cmd.Context(), opts)
			if err != nil {
				return err
			}
			printMigrateReport(cmd, m, rep)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&m.database, "database", "", "PostgreSQL target, postgres://USER:PASSWORD@HOST/DB")
	f.StringVar(&m.objectStorage, "object-storage", "", "S3 target, s3://BUCKET/PREFIX")
	f.StringVar(&m.s3Endpoint, "s3-endpoint", "", "S3 endpoint URL, e.g. http://127.0.0.1:9000 (default AWS)")
	f.StringVar(&m.s3Region, "s3-region", "", "S3 region (default: $AWS_REGION; us-east-1 suits most self-hosted servers)")
	f.StringVar(&m.s3PathStyle, "s3-path-style", "auto", "address the bucket in the URL path (ENDPOINT/BUCKET/KEY): true, false, or auto (on when --s3-endpoint is set)")
	f.BoolVar(&m.replace, "replace-target", false, "delete what the targets already hold, then copy (default: refuse a target with data)")
	withEnvHelp(f)
	return cmd
}

// envOrFile reads the variable, else the file named by its _FILE twin.
func envOrFile(name string) (string, error) {
	if v := os.Getenv(name); v != "" {
		return v, nil
	}
	if path := os.Getenv(name + "_FILE"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("%s_FILE: %w", name, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return "", nil
}

func printMigrateReport(cmd *cobra.Command, m *migrateOptions, rep MigrateReport) {
	w := cmd.OutOrStdout()
	if m.database != "" {
		fmt.Fprintf(w, "database: copied %s, %s (%d revoked), %s, %s (%s: queued again)\n",
			plural(rep.Accounts, "account", "accounts"), plural(rep.Keys, "key", "keys"), rep.RevokedKeys,
			plural(rep.Months, "month of spend", "months of spend"), plural(rep.UnfinishedJobs, "unfinished job", "unfinished jobs"),
			plural(rep.Requeued, "of them was running", "of them were running"))
		fmt.Fprintf(w, "database: not copied: %s (%s kept in the ledger as purged)\n",
			plural(rep.FinishedJobs, "finished job", "finished jobs"), plural(rep.PurgedAdded, "success", "successes"))
		fmt.Fprintf(w, "database: copied webhooks: %s, %s, %s, %s\n",
			plural(rep.WebhookEndpoints, "endpoint with its secret", "endpoints with their secrets"),
			plural(rep.WebhookSigningSecrets, "signing secret", "signing secrets"), plural(rep.JobWebhooks, "job webhook_url", "job webhook_urls"),
			plural(rep.PendingDeliveries, "pending delivery", "pending deliveries"))
		fmt.Fprintf(w, "database: copied %s\n", plural(rep.Presets, "preset", "presets"))
		if rep.DeliveryHistory > 0 {
			fmt.Fprintf(w, "database: not copied: %s (history)\n", plural(rep.DeliveryHistory, "delivered or failed webhook delivery", "delivered or failed webhook deliveries"))
		}
		fmt.Fprintln(w, "database: ledger verified")
	}
	if m.objectStorage != "" {
		fmt.Fprintf(w, "object storage: copied %s (%s), each read back and compared by SHA-256\n",
			plural(rep.Inputs, "input file", "input files"), plural(rep.InputBytes, "byte", "bytes"))
	}
	if len(rep.MissingInputs) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s no input file in the data dir (they will fail when run): %s\n",
			plural(len(rep.MissingInputs), "started job had", "started jobs had"), strings.Join(rep.MissingInputs, ", "))
	}
}
