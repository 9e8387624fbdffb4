package convert

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// FuzzArchive feeds arbitrary bytes to every archive reader: errors must be *Error, and any
// archive written must hold only safe relative names.
func FuzzArchive(f *testing.F) {
	addFuzzSamples(f, "archives", "sample*")
	addFuzzSamples(f, "hostile", "archive-*")
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		for _, from := range []string{"zip", "tar", "tgz", "tzst"} {
			to := "tar"
			if from == "tar" {
				to = "zip"
			}
			var out bytes.Buffer
			err := archiveRun(from, to)(ctx, bytesSection(data), &out, Params{})
			requireUserError(t, err)
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
