package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/service"
)

func newFormatsCommand() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "formats [ID]",
		Short: "List the formats this build recognises, or what one format converts to",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cat := convert.NewCatalog(convert.Limits{MaxPixels: service.DefaultMaxPixels})
			out := cmd.OutOrStdout()
			if len(args) == 1 {
				f, ok := cat.Format(args[0])
				if !ok {
					return fmt.Errorf("unknown format %q", args[0])
				}
				targets, sources := cat.Targets(f.ID), cat.Sources(f.ID)
				if jsonOut {
					return json.NewEncoder(out).Encode(map[string]any{"format": f, "targets": targets, "sources": sources})
				}
				fmt.Fprintf(out, "%s (%s, %s)\n  converts to:   %s\n  converts from: %s\n",
					f.ID, f.Name, f.MIME, orNone(targets), orNone(sources))
				return nil
			}
			if jsonOut {
				return json.NewEncoder(out).Encode(cat.Formats())
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tCATEGORY\tNAME\tEXTENSIONS\tCONVERTS TO")
			for _, f := range cat.Formats() {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.ID, f.Category, f.Name, strings.Join(f.Extensions, ","), orNone(cat.Targets(f.ID)))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return cmd
}

func orNone(ids []string) string {
	if len(ids) == 0 {
		return "-"
	}
	return strings.Join(ids, ", ")
}
