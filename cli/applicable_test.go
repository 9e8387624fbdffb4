package cli

import (
	"testing"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/standard"
	"github.com/convsvc/convsvc/service"
)

// TestFormats_RemotePagesRuleIsTheCatalogs: a server's formats do not show paths, so the CLI
// tells whether pages applies from the formats; that rule agrees with Catalog.PagesApply on
// every pair of this binary's catalog.
func TestFormats_RemotePagesRuleIsTheCatalogs(t *testing.T) {
	cat := standard.NewCatalog(convert.Limits{MaxPixels: service.DefaultMaxPixels})
	view := func(f convert.Format) client.Format {
		return client.Format{ID: f.ID, Category: f.Category, Targets: cat.Targets(f.ID)}
	}
	for _, in := range cat.Formats() {
		for _, to := range cat.Targets(in.ID) {
			out, _ := cat.Format(to)
			if got, want := (remoteFormats{}).pagesApply(view(in), view(out)), cat.PagesApply(in.ID, to); got != want {
				t.Errorf("%s to %s: remote rule says pages applies %v, the catalog %v", in.ID, to, got, want)
			}
		}
	}
}
