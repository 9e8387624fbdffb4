package cli_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/cli"
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/standard"
)

// TestConvertHelp_FormatsListedTakeTheOption: the formats convert's --lossless and --quality
// help names in parentheses are exactly the catalog's targets that accept that option.
func TestConvertHelp_FormatsListedTakeTheOption(t *testing.T) {
	cat := standard.NewCatalog(convert.Limits{})
	cmd, _, err := cli.NewRootCommand().Find([]string{"convert"})
	if err != nil {
		t.Fatal(err)
	}
	for flag, option := range map[string]string{"lossless": convert.OptLossless, "quality": convert.OptQuality} {
		var want []string
		for _, f := range cat.Formats() {
			if slices.Contains(f.Options, option) && len(cat.Sources(f.ID)) > 0 {
				want = append(want, f.ID)
			}
		}
		usage := cmd.Flags().Lookup(flag).Usage
		m := regexp.MustCompile(`\(([^)]*)\)`).FindStringSubmatch(usage)
		if m == nil {
			t.Errorf("--%s help %q names no formats; want (%s)", flag, usage, strings.Join(want, ", "))
			continue
		}
		got := strings.Split(m[1], ", ")
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("--%s help %q names %v; the formats that accept %s are %v", flag, usage, got, option, want)
		}
	}
}
