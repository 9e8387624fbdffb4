package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/convsvc/convsvc/client"
)

// adminOptions are the connection flags shared by every admin command.
type adminOptions struct {
	server     string
	adminToken string
	dataDir    string
}

// client builds an admin client; the token defaults to DATA/admin.token of a local server.
func (o *adminOptions) client() (*client.Client, error) {
	token := o.adminToken
	if token == "" {
		b, err := os.ReadFile(filepath.Join(o.dataDir, "admin.token"))
		if err != nil {
			return nil, fmt.Errorf("no admin token: pass --admin-token, set CONVSVC_ADMIN_TOKEN, or point --data at the server's data dir (%w)", err)
		}
		token = strings.TrimSpace(string(b))
	}
	return &client.Client{BaseURL: o.server, Key: token}, nil
}

func newAdminCommand() *cobra.Command {
	o := &adminOptions{}
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Manage the accounts, API keys, presets and webhooks of a running convsvc; back up or migrate its data",
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.server, "server", "http://127.0.0.1:8080", "API base URL")
	pf.StringVar(&o.adminToken, "admin-token", "", "admin token (default: read DATA/admin.token)")
	pf.StringVar(&o.dataDir, "data", "./convsvc-data", "data dir of a local server, to read its admin.token")
	withEnvHelp(pf)
	cmd.AddCommand(newAdminAccountsCommand(o), newAdminKeysCommand(o), newAdminBackupCommand(o))
	cmd.AddCommand(newAdminMigrateCommand(o), newAdminWebhooksCommand(o), newAdminPresetsCommand(o))
	return cmd
}

func newAdminBackupCommand(o *adminOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "backup [-o FILE]",
		Short: "Save a consistent copy of the server's database",
		Long: "Save a consistent copy of the server's database (accounts, hashed keys, jobs, ledger,\n" +
			"queue), taken in one read transaction while the server keeps working. The file is\n" +
			"written atomically: FILE appears complete or not at all. Restore: stop the server,\n" +
			"copy the file to DATA/convsvc.db, start it (docs/operations.md).",
		Example: "  convsvc admin backup -o /backups/convsvc-$(date -u +%Y%m%d-%H%M%S).db\n  convsvc admin backup -o - | gzip > convsvc.db.gz",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			if output == "-" {
				_, err := c.Backup(cmd.Context(), cmd.OutOrStdout())
				return err
			}
			if output == "" {
				output = "convsvc-" + time.Now().UTC().Format("20060102-150405") + ".db"
			}
			n, err := writeAtomically(output, func(w io.Writer) (int64, error) { return c.Backup(cmd.Context(), w) })
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s (%s)\n", output, plural(n, "byte", "bytes"))
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "file to write, - for stdout (default convsvc-YYYYMMDD-HHMMSS.db)")
	return cmd
}

// writeAtomically writes path through a temporary file in the same directory: synced, renamed
// into place and the directory synced, or removed on any error.
func writeAtomically(path string, write func(io.Writer) (int64, error)) (int64, error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, err
	}
	committed := false
	defer func() {
		if !committed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	n, err := write(tmp)
	if err != nil {
		return n, err
	}
	if err := tmp.Sync(); err != nil {
		return n, fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return n, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return n, fmt.Errorf("write %s: %w", path, err)
	}
	committed = true
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return n, nil
}

func printJSON(cmd *cobra.Command, v any) error {
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newAdminAccountsCommand(o *adminOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "accounts", Short: "Create, list, get and update accounts"}
	var name string
	var capCents int64
	create := &cobra.Command{
		Use:   "create --name NAME --spend-cap-cents N",
		Short: "Create an account",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			acct, err := c.CreateAccount(cmd.Context(), name, capCents)
			if err != nil {
				return err
			}
			return printJSON(cmd, acct)
		},
	}
	create.Flags().StringVar(&name, "name", "", "account name")
	create.Flags().Int64Var(&capCents, "spend-cap-cents", 1000, "monthly spend cap in cents")
	create.MarkFlagRequired("name")

	var accountsPage client.PageOptions
	list := &cobra.Command{
		Use:   "list",
		Short: "List accounts",
		Long: "List every account, oldest first, as a JSON array. With --limit or --starting-after, print one\n" +
			"page instead: {\"data\": [...], \"has_more\": bool}.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			if accountsPage != (client.PageOptions{}) {
				page, err := c.AccountsPage(cmd.Context(), accountsPage)
				if err != nil {
					return err
				}
				return printJSON(cmd, page)
			}
			accts, err := c.Accounts(cmd.Context())
			if err != nil {
				return err
			}
			return printJSON(cmd, accts)
		},
	}
	pageFlags(list, &accountsPage)
	get := &cobra.Command{
		Use: "get ACCOUNT_ID", Short: "Show an account with its monthly spend", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			acct, err := c.Account(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd, acct)
		},
	}
	var newName string
	var newCap int64
	var lf limitFlags
	update := &cobra.Command{
		Use: "update ACCOUNT_ID [--name NAME] [--spend-cap-cents N] [--max-running N|unlimited] [--max-queued N|unlimited]", Short: "Change an account's name, spend cap or queue limits", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var namePtr *string
			var capPtr *int64
			if cmd.Flags().Changed("name") {
				namePtr = &newName
			}
			if cmd.Flags().Changed("spend-cap-cents") {
				capPtr = &newCap
			}
			limits, setLimits, err := lf.limits(cmd)
			if err != nil {
				return err
			}
			if namePtr == nil && capPtr == nil && !setLimits {
				return errors.New("nothing to change: pass --name, --spend-cap-cents, --max-running and/or --max-queued")
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			var acct client.Account
			if namePtr != nil || capPtr != nil {
				if acct, err = c.UpdateAccount(cmd.Context(), args[0], namePtr, capPtr); err != nil {
					return err
				}
			}
			if setLimits {
				if acct, err = c.SetAccountLimits(cmd.Context(), args[0], limits); err != nil {
					return err
				}
			}
			return printJSON(cmd, acct)
		},
	}
	lf.add(update)
	update.Flags().StringVar(&newName, "name", "", "new name")
	update.Flags().Int64Var(&newCap, "spend-cap-cents", 0, "new monthly spend cap in cents")
	cmd.AddCommand(create, list, get, update)
	return cmd
}

func newAdminKeysCommand(o *adminOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "keys", Short: "Issue, list and revoke API keys"}
	var presetsOnly bool
	create := &cobra.Command{
		Use: "create ACCOUNT_ID", Short: "Issue a key (shown once)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			key, err := c.CreateKeyWith(cmd.Context(), args[0], client.KeyOptions{PresetsOnly: presetsOnly})
			if err != nil {
				return err
			}
			return printJSON(cmd, key)
		},
	}
	var keysPage client.PageOptions
	list := &cobra.Command{
		Use:   "list ACCOUNT_ID",
		Short: "List an account's keys",
		Long: "List every key of the account, oldest first, as a JSON array. With --limit or --starting-after,\n" +
			"print one page instead: {\"data\": [...], \"has_more\": bool}.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			if keysPage != (client.PageOptions{}) {
				page, err := c.KeysPage(cmd.Context(), args[0], keysPage)
				if err != nil {
					return err
				}
				return printJSON(cmd, page)
			}
			keys, err := c.Keys(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd, keys)
		},
	}
	revoke := &cobra.Command{
		Use: "revoke KEY_ID", Short: "Revoke a key at once", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			key, err := c.RevokeKey(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd, key)
		},
	}
	create.Flags().BoolVar(&presetsOnly, "presets-only", false, "limit the key to jobs created from a preset (a front end's key)")
	pageFlags(list, &keysPage)
	cmd.AddCommand(create, list, revoke)
	return cmd
}

// pageFlags adds --limit and --starting-after, which select one page of a list.
func pageFlags(cmd *cobra.Command, p *client.PageOptions) {
	cmd.Flags().IntVar(&p.Limit, "limit", 0, "print one page of at most this many (1 to 100)")
	cmd.Flags().StringVar(&p.StartingAfter, "starting-after", "", "print the page after this id (the last id of the previous page)")
}
