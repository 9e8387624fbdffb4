package archive

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
)

// FuzzArchive feeds arbitrary bytes to every archive reader: errors must be *Error, and any
// archive written must hold only safe relative names.
func FuzzArchive(f *testing.F) {
	convtest.AddFuzzSamples(f, "archives", "sample*")
	convtest.AddFuzzSamples(f, "hostile", "archive-*")
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		for _, from := range []string{"zip", "tar", "tgz", "tzst"} {
			to := "tar"
			if from == "tar" {
				to = "zip"
			}
			var out bytes.Buffer
			err := archiveRun(from, to)(ctx, convtest.BytesSection(data), &out, convert.Params{})
			convtest.RequireUserError(t, err)
			if err != nil {
				continue
			}
			for _, e := range listArchive(t, to, out.Bytes()) {
				if strings.HasPrefix(e.name, "/") || strings.Contains("/"+e.name+"/", "/../") {
					t.Fatalf("%s -> %s wrote entry %q", from, to, e.name)
				}
			}
		}
	})
}
