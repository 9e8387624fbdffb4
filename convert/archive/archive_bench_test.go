package archive

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
)

func BenchmarkArchive(b *testing.B) {
	// 10 MB over 200 files: logs (compressing about 20 times) and ten of random bytes.
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	seed := uint32(7)
	for i := range 200 {
		w, _ := zw.Create(fmt.Sprintf("dir%d/file%03d.txt", i%10, i))
		if i%20 == 0 {
			raw := make([]byte, 50<<10)
			for j := range raw {
				seed = seed*1664525 + 1013904223
				raw[j] = byte(seed >> 24)
			}
			w.Write(raw)
			continue
		}
		w.Write([]byte(strings.Repeat(fmt.Sprintf("line %d of a log file with some repetition\n", i), 1200)))
	}
	zw.Close()
	z := buf.Bytes()
	b.Run("zip-tgz-10MB", func(b *testing.B) { convtest.BenchConverter(b, archiveRun("zip", "tgz"), z) })
	b.Run("zip-tzst-10MB", func(b *testing.B) { convtest.BenchConverter(b, archiveRun("zip", "tzst"), z) })
	var tgz bytes.Buffer
	if err := archiveRun("zip", "tgz")(context.Background(), io.NewSectionReader(bytes.NewReader(z), 0, int64(len(z))), &tgz, convert.Params{}); err != nil {
		b.Fatal(err)
	}
	b.Run("tgz-zip-10MB", func(b *testing.B) { convtest.BenchConverter(b, archiveRun("tgz", "zip"), tgz.Bytes()) })
}
