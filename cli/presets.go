package cli

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/convsvc/convsvc/client"
)

// newAdminPresetsCommand is `convsvc admin presets set|get|list|rm`.
func newAdminPresetsCommand(o *adminOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "presets", Short: "Define, list and remove presets (named jobs)"}
	set := &cobra.Command{
		Use:   "set NAME JSON",
		Short: "Define a preset or replace it",
		Long: "Define the preset NAME, or replace its target and options, from a JSON object\n" +
			"{\"target_format\": ID, \"options\": {...}}; the server checks both against its formats.\n" +
			"Jobs created with \"preset\": NAME (convsvc convert --preset NAME) take them.",
		Example: `  convsvc admin presets set web-thumb '{"target_format":"webp","options":{"width":320,"quality":75}}'`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var req client.PresetRequest
			dec := json.NewDecoder(bytes.NewReader([]byte(args[1])))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&req); err != nil {
				return fmt.Errorf("preset %s: the JSON is not {\"target_format\": ..., \"options\": {...}}: %w", args[0], err)
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			p, err := c.SetPreset(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			return printJSON(cmd, p)
		},
	}
	get := &cobra.Command{
		Use: "get NAME", Short: "Show a preset", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			p, err := c.Preset(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd, p)
		},
	}
	list := &cobra.Command{
		Use: "list", Short: "List every preset, by name", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			ps, err := c.Presets(cmd.Context())
			if err != nil {
				return err
			}
			return printJSON(cmd, ps)
		},
	}
	rm := &cobra.Command{
		Use: "rm NAME", Short: "Remove a preset (jobs created from it are unchanged)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			p, err := c.DeletePreset(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd, p)
		},
	}
	cmd.AddCommand(set, get, list, rm)
	return cmd
}
