package standard

import (
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
)

// matrixOwners restates which family's TestX_Matrix converts and checks a pair (see each
// family's matrix test): the family whose tests can read the output back.
func matrixOwners(c *convert.Catalog, from, to string) []string {
	cat := func(id string) string { f, _ := c.Format(id); return f.Category }
	table := to == "markdown" || to == "html"
	var owners []string
	add := func(family string, owns bool) {
		if owns {
			owners = append(owners, family)
		}
	}
	add("image", cat(from) == convert.CategoryImage && cat(to) == convert.CategoryImage)
	add("document", cat(to) == convert.CategoryDocument && !(cat(from) == convert.CategoryData && table) ||
		cat(to) == convert.CategoryImage && cat(from) != convert.CategoryImage)
	add("data", cat(to) == convert.CategoryData || cat(from) == convert.CategoryData && table)
	add("audio", cat(to) == convert.CategoryAudio)
	add("archive", cat(to) == convert.CategoryArchive)
	return owners
}

// TestStandard_MatrixCovered checks that the families' matrix tests together convert every
// sample to every target of the standard catalog, each pair in exactly one family, and that
// every convertible format has a sample in testdata.
func TestStandard_MatrixCovered(t *testing.T) {
	c := NewCatalog(convert.Limits{})
	covered := map[string]bool{}
	for _, path := range convtest.Samples() {
		from := convtest.FormatOfSample(c, path)
		if from == "" {
			t.Errorf("%s: no format has its extension", path)
			continue
		}
		covered[from] = true
		for _, to := range c.Targets(from) {
			if owners := matrixOwners(c, from, to); len(owners) != 1 {
				t.Errorf("%s -> %s: checked by %v, want exactly one family", filepath.Base(path), to, owners)
			}
		}
	}
	for _, f := range c.Formats() {
		if len(c.Targets(f.ID)) > 0 && !covered[f.ID] {
			t.Errorf("format %s converts to %v but has no sample in testdata/%v", f.ID, c.Targets(f.ID), convtest.SampleDirs)
		}
	}
}
