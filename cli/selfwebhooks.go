package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/convsvc/convsvc/client"
)

// newWebhooksCommand is `convsvc webhooks`: the webhook endpoints and signing secret of the
// account an API key belongs to, managed with that key (docs/webhooks.md).
func newWebhooksCommand() *cobra.Command {
	var server, key string
	cmd := &cobra.Command{
		Use:   "webhooks",
		Short: "Register your account's webhook endpoints and rotate its signing secret, with its API key",
		Long: "Manage the webhook endpoints of the account --key belongs to: every job.succeeded,\n" +
			"job.failed and job.cancelled event of its jobs is POSTed to each, signed with the\n" +
			"endpoint's secret, which `add` prints once and `rotate` replaces (the old one signs 24\n" +
			"hours more). `rotate-secret` makes the account's signing\n" +
			"secret for the webhook_url a job names at create; the secret it replaces keeps signing\n" +
			"beside it for 24 hours. Operators manage any account with `convsvc admin webhooks`\n" +
			"(docs/webhooks.md).",
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&server, "server", "http://127.0.0.1:8080", "API base URL")
	pf.StringVar(&key, "key", "", "the account's API key, cs_live_...")
	withEnvHelp(pf)
	run := func(fn func(ctx context.Context, c *client.Client, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			if key == "" {
				return errors.New("webhooks needs the account's API key: pass --key or set CONVSVC_KEY")
			}
			return fn(cmd.Context(), &client.Client{BaseURL: server, Key: key}, cmd, args)
		}
	}
	add := &cobra.Command{
		Use: "add URL", Short: "Register an endpoint (its secret is shown once)", Args: cobra.ExactArgs(1),
		Example: "  CONVSVC_KEY=cs_live_... convsvc webhooks add https://hooks.example.com/convsvc",
		RunE: run(func(ctx context.Context, c *client.Client, cmd *cobra.Command, args []string) error {
			ep, err := c.CreateOwnWebhook(ctx, args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd, ep)
		}),
	}
	list := &cobra.Command{
		Use: "list", Short: "List the account's endpoints (without secrets)", Args: cobra.NoArgs,
		RunE: run(func(ctx context.Context, c *client.Client, cmd *cobra.Command, _ []string) error {
			eps, err := c.OwnWebhooks(ctx)
			if err != nil {
				return err
			}
			return printJSON(cmd, eps)
		}),
	}
	rm := &cobra.Command{
		Use: "rm ENDPOINT_ID", Short: "Remove an endpoint; its pending deliveries fail", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, cmd *cobra.Command, args []string) error {
			ep, err := c.DeleteOwnWebhook(ctx, args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd, ep)
		}),
	}
	rotateEndpoint := &cobra.Command{
		Use:   "rotate ENDPOINT_ID",
		Short: "Make a new secret for an endpoint (shown once); the old one signs 24 h more",
		Args:  cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, cmd *cobra.Command, args []string) error {
			ep, err := c.RotateOwnWebhook(ctx, args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd, ep)
		}),
	}
	secret := &cobra.Command{
		Use: "secret", Short: "Show whether the account has a signing secret (its prefix, never the secret)", Args: cobra.NoArgs,
		RunE: run(func(ctx context.Context, c *client.Client, cmd *cobra.Command, _ []string) error {
			st, err := c.WebhookSecret(ctx)
			if err != nil {
				return err
			}
			return printJSON(cmd, st)
		}),
	}
	rotate := &cobra.Command{
		Use:   "rotate-secret",
		Short: "Make a new signing secret for jobs' webhook_url (shown once); the old one signs 24 h more",
		Long: "Make the account's new signing secret for the webhook_url its jobs name at create, and\n" +
			"print it once. Deliveries in the next 24 hours carry two v1= values in Convsvc-Signature,\n" +
			"one per secret, so receivers can switch to the new secret meanwhile; then only the new one\n" +
			"signs. Rotating again within the 24 hours ends the oldest secret at once.",
		Args: cobra.NoArgs,
		RunE: run(func(ctx context.Context, c *client.Client, cmd *cobra.Command, _ []string) error {
			s, err := c.RotateWebhookSecret(ctx)
			if err != nil {
				return err
			}
			return printJSON(cmd, s)
		}),
	}
	cmd.AddCommand(add, list, rm, rotateEndpoint, secret, rotate)
	return cmd
}
