package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/convsvc/convsvc/client"
)

// newAdminWebhooksCommand is `convsvc admin webhooks`: an account's endpoints, its signing
// secret for jobs' webhook_url, and the deliveries (docs/webhooks.md).
func newAdminWebhooksCommand(o *adminOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "webhooks",
		Short: "Register webhook endpoints and see their deliveries",
		Long: "Register an account's webhook endpoints: every job.succeeded, job.failed and job.cancelled\n" +
			"event of the account's jobs is POSTed to each, signed with the endpoint's secret, which\n" +
			"`add` prints once. `secret` makes the account's signing secret for the webhook_url a job\n" +
			"names at create. Destinations on loopback, private or link-local addresses are refused\n" +
			"unless the server runs with --webhook-allow-private (docs/webhooks.md).",
	}
	// run is a subcommand body with the admin client.
	run := func(fn func(ctx context.Context, c *client.Client, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			return fn(cmd.Context(), c, cmd, args)
		}
	}
	add := &cobra.Command{
		Use: "add ACCOUNT_ID URL", Short: "Register an endpoint (its secret is shown once)", Args: cobra.ExactArgs(2),
		Example: "  convsvc admin webhooks add acct_123 https://hooks.example.com/convsvc",
		RunE: run(func(ctx context.Context, c *client.Client, cmd *cobra.Command, args []string) error {
			ep, err := c.CreateWebhook(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			return printJSON(cmd, ep)
		}),
	}
	list := &cobra.Command{
		Use: "list ACCOUNT_ID", Short: "List an account's endpoints (without secrets)", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, cmd *cobra.Command, args []string) error {
			eps, err := c.Webhooks(ctx, args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd, eps)
		}),
	}
	rm := &cobra.Command{
		Use: "rm ACCOUNT_ID ENDPOINT_ID", Short: "Remove an endpoint; its pending deliveries fail", Args: cobra.ExactArgs(2),
		RunE: run(func(ctx context.Context, c *client.Client, cmd *cobra.Command, args []string) error {
			ep, err := c.DeleteWebhook(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			return printJSON(cmd, ep)
		}),
	}
	enable := &cobra.Command{
		Use: "enable ACCOUNT_ID ENDPOINT_ID", Short: "Enable an endpoint disabled for failing", Args: cobra.ExactArgs(2),
		RunE: run(func(ctx context.Context, c *client.Client, cmd *cobra.Command, args []string) error {
			ep, err := c.EnableWebhook(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			return printJSON(cmd, ep)
		}),
	}
	rotate := &cobra.Command{
		Use: "rotate ACCOUNT_ID ENDPOINT_ID", Short: "Make a new secret for an endpoint (shown once); the old one signs 24 h more", Args: cobra.ExactArgs(2),
		RunE: run(func(ctx context.Context, c *client.Client, cmd *cobra.Command, args []string) error {
			ep, err := c.RotateWebhook(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			return printJSON(cmd, ep)
		}),
	}
	secret := &cobra.Command{
		Use:   "secret ACCOUNT_ID",
		Short: "Make the account's signing secret for jobs' webhook_url (shown once)",
		Long: "Make the signing secret of the webhook_url the account's jobs name at create, replacing\n" +
			"the one before (which keeps signing beside it for 24 hours); until an account has one, a\n" +
			"create with webhook_url is refused.",
		Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, cmd *cobra.Command, args []string) error {
			s, err := c.CreateWebhookSecret(ctx, args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd, s)
		}),
	}
	var state string
	var limit int
	deliveries := &cobra.Command{
		Use:   "deliveries ACCOUNT_ID",
		Short: "List an account's recent deliveries with their state and last error",
		Args:  cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, cmd *cobra.Command, args []string) error {
			switch state {
			case "", "pending", "delivered", "failed":
			default:
				return fmt.Errorf("--state must be pending, delivered or failed, not %q", state)
			}
			ds, err := c.WebhookDeliveries(ctx, args[0], state, limit)
			if err != nil {
				return err
			}
			return printJSON(cmd, ds)
		}),
	}
	deliveries.Flags().StringVar(&state, "state", "", "only deliveries in this state: pending, delivered or failed")
	deliveries.Flags().IntVar(&limit, "limit", 50, "at most this many, newest first (1 to 500)")
	cmd.AddCommand(add, list, rm, enable, rotate, secret, deliveries)
	return cmd
}
