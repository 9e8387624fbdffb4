package convtest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// WarningCase is one row of a family's warnings table: converting Sample (a file in the
// table's directory) from From to To with Opts must report exactly Want (nil: nothing).
type WarningCase struct {
	Sample, From, To string
	Opts             convert.Options
	Want             []convert.Warning
}

// Warning is a convert.Warning literal.
func Warning(code, message string) convert.Warning {
	return convert.Warning{Code: code, Message: message}
}

// CheckWarnings converts every case's sample, read from dir, with c to io.Discard and fails t
// unless Catalog.Convert succeeds with exactly the case's warnings, in order.
func CheckWarnings(t *testing.T, c *convert.Catalog, dir string, cases []WarningCase) {
	t.Helper()
	for _, tt := range cases {
		f, err := os.Open(filepath.Join(dir, tt.Sample))
		if err != nil {
			t.Fatal(err)
		}
		ws, err := c.Convert(context.Background(), tt.From, tt.To, tt.Opts, f, io.Discard, t.TempDir())
		f.Close()
		if err != nil {
			t.Fatalf("%s -> %s: %v", tt.Sample, tt.To, err)
		}
		if !reflect.DeepEqual(ws, tt.Want) {
			t.Errorf("%s -> %s: warnings\n%+v\nwant\n%+v", tt.Sample, tt.To, ws, tt.Want)
		}
	}
}
