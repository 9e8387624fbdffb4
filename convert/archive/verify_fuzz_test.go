package archive

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
)

// FuzzVerifyArchive feeds the archive output checks any bytes as zip, tar, tar.gz and tar.zst:
// each fails or passes, never panics.
func FuzzVerifyArchive(f *testing.F) {
	convtest.AddFuzzSamples(f, "archives", "sample*")
	c := convert.NewEmptyCatalog(convert.Limits{})
	Register(c)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, id := range []string{"zip", "tar", "tgz", "tzst"} {
			c.Verify(context.Background(), id, id, convert.Options{}, nil, bytes.NewReader(b), int64(len(b)))
		}
		verifyZip(context.Background(), io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b))), convert.Check{})
	})
}
