package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/standard"
	"github.com/convsvc/convsvc/service"
)

// formatSource is where convsvc formats reads the catalog: this binary's, or a server's.
type formatSource interface {
	// list returns every format, without targets, sources or options.
	list(ctx context.Context) ([]client.Format, error)
	// detail returns one format with its targets, sources and options.
	detail(ctx context.Context, id string) (client.Format, error)
	// pagesApply reports whether the pages option applies to converting input to target
	// (detailed formats).
	pagesApply(input, target client.Format) bool
}

// localFormats is this binary's catalog.
type localFormats struct{ cat *convert.Catalog }

func (l localFormats) list(context.Context) ([]client.Format, error) {
	var out []client.Format
	for _, f := range l.cat.Formats() {
		out = append(out, client.Format{ID: f.ID, Name: f.Name, Category: f.Category, Extensions: f.Extensions, MIME: f.MIME})
	}
	return out, nil
}

func (l localFormats) detail(_ context.Context, id string) (client.Format, error) {
	f, ok := l.cat.Format(id)
	if !ok {
		return client.Format{}, fmt.Errorf("unknown format %q; convsvc formats lists them", id)
	}
	return client.Format{ID: f.ID, Name: f.Name, Category: f.Category, Extensions: f.Extensions, MIME: f.MIME,
		Targets: nonNil(l.cat.Targets(f.ID)), Sources: nonNil(l.cat.Sources(f.ID)), Options: nonNil(f.Options)}, nil
}

func (l localFormats) pagesApply(input, target client.Format) bool {
	return l.cat.PagesApply(input.ID, target.ID)
}

// remoteFormats asks a running server (GET /v1/formats and /v1/formats/{id}).
type remoteFormats struct{ c *client.Client }

func (r remoteFormats) list(ctx context.Context) ([]client.Format, error) { return r.c.Formats(ctx) }

func (r remoteFormats) detail(ctx context.Context, id string) (client.Format, error) {
	f, err := r.c.Format(ctx, id)
	if client.IsCode(err, "not_found") {
		return f, fmt.Errorf("unknown format %q; convsvc formats --server %s lists them", id, r.c.BaseURL)
	}
	f.Targets, f.Sources, f.Options = nonNil(f.Targets), nonNil(f.Sources), nonNil(f.Options)
	return f, err
}

// pagesApply: a server's API does not show conversion paths, so this is the catalog's rule
// (Catalog.PagesApply) told from the formats: pdf to pdf, or pdf or a document that converts
// to pdf to an image.
func (r remoteFormats) pagesApply(input, target client.Format) bool {
	if input.ID == "pdf" && target.ID == "pdf" {
		return true
	}
	return target.Category == convert.CategoryImage &&
		(input.ID == "pdf" || input.Category == convert.CategoryDocument && slices.Contains(input.Targets, "pdf"))
}

// applicable lists the options that apply to converting input to target (detailed formats).
func applicable(src formatSource, input, target client.Format) []string {
	return convert.ApplicableOptions(convert.Format{ID: input.ID, Category: input.Category},
		convert.Format{ID: target.ID, Category: target.Category, Options: target.Options}, src.pagesApply(input, target))
}

// details fetches the detail of every id, eight at a time (a remote catalog is one request
// per format).
func details(ctx context.Context, src formatSource, ids []string) (map[string]client.Format, error) {
	out := make(map[string]client.Format, len(ids))
	var mu sync.Mutex
	var firstErr error
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f, err := src.detail(ctx, id)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			out[id] = f
		}()
	}
	wg.Wait()
	return out, firstErr
}

func newFormatsCommand() *cobra.Command {
	var jsonOut, markdown bool
	var server string
	cmd := &cobra.Command{
		Use:   "formats [ID]",
		Short: "List the formats, or what one format converts to and the options each target takes",
		Long: "List the formats with what each converts to, from this binary's catalog or, with\n" +
			"--server (or CONVSVC_URL), from a running server's GET /v1/formats. With an ID (or an\n" +
			"extension), show that format: its targets with the options each accepts, and its sources.",
		Example: "  convsvc formats\n  convsvc formats png\n  CONVSVC_URL=http://127.0.0.1:8080 convsvc formats --json",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if markdown {
				return writeFormatsMarkdown(cmd.OutOrStdout(), standard.NewCatalog(convert.Limits{MaxPixels: service.DefaultMaxPixels}))
			}
			var src formatSource = localFormats{standard.NewCatalog(convert.Limits{MaxPixels: service.DefaultMaxPixels})}
			if server != "" {
				src = remoteFormats{&client.Client{BaseURL: server}}
			}
			var err error
			if len(args) == 1 {
				err = showFormat(cmd.Context(), cmd.OutOrStdout(), src, args[0], jsonOut)
			} else {
				err = listFormats(cmd.Context(), cmd.OutOrStdout(), src, jsonOut)
			}
			return reachable(err, server)
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON (the API's shapes)")
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print docs/formats.md: every format, pair and option of this binary's catalog")
	cmd.Flags().StringVar(&server, "server", "", "API base URL of a running convsvc (default: this binary's catalog) [$CONVSVC_URL, or $CONVSVC_SERVER]")
	return cmd
}

func listFormats(ctx context.Context, out io.Writer, src formatSource, jsonOut bool) error {
	formats, err := src.list(ctx)
	if err != nil {
		return fmt.Errorf("list formats: %w", err)
	}
	if jsonOut {
		return json.NewEncoder(out).Encode(formats)
	}
	ids := make([]string, len(formats))
	for i, f := range formats {
		ids[i] = f.ID
	}
	detail, err := details(ctx, src, ids)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCATEGORY\tNAME\tEXTENSIONS\tCONVERTS TO")
	for _, f := range formats {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.ID, f.Category, f.Name, strings.Join(f.Extensions, ","), orNone(detail[f.ID].Targets))
	}
	return tw.Flush()
}

// formatView is convsvc formats ID --json: GET /v1/formats/{id} plus each target's options.
type formatView struct {
	client.Format
	TargetOptions map[string][]string `json:"target_options"`
}

func showFormat(ctx context.Context, out io.Writer, src formatSource, id string, jsonOut bool) error {
	formats, err := src.list(ctx)
	if err != nil {
		return fmt.Errorf("list formats: %w", err)
	}
	if f, ok := findFormat(formats, id); ok {
		id = f.ID // an extension names its format: jpg is jpeg
	}
	f, err := src.detail(ctx, id)
	if err != nil {
		return err
	}
	targets, err := details(ctx, src, f.Targets)
	if err != nil {
		return err
	}
	v := formatView{Format: f, TargetOptions: map[string][]string{}}
	for _, t := range f.Targets {
		v.TargetOptions[t] = nonNil(applicable(src, f, targets[t]))
	}
	if jsonOut {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	fmt.Fprintf(out, "%s: %s (%s, %s; extensions %s)\n", f.ID, f.Name, f.Category, f.MIME, strings.Join(f.Extensions, ", "))
	fmt.Fprintf(out, "converts from: %s\n", orNone(f.Sources))
	fmt.Fprintf(out, "options when converting to %s: %s\n", f.ID, orNone(f.Options))
	if len(f.Targets) == 0 {
		fmt.Fprintln(out, "converts to: -")
		return nil
	}
	fmt.Fprintln(out, "converts to:")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TARGET\tOPTIONS")
	for _, t := range f.Targets {
		fmt.Fprintf(tw, "  %s\t%s\n", t, orNone(v.TargetOptions[t]))
	}
	return tw.Flush()
}

func orNone(ids []string) string {
	if len(ids) == 0 {
		return "-"
	}
	return strings.Join(ids, ", ")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
