package convert

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestZZTimeCorpus(t *testing.T) {
	dir := os.Getenv("CORPUS")
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		s := string(raw)
		i := strings.Index(s, "[]byte(")
		lit := strings.TrimSuffix(strings.TrimSpace(s[i+7:]), ")")
		v, err := strconv.Unquote(lit)
		if err != nil {
			t.Log(f, err)
			continue
		}
		data := []byte(v)
		id, _ := sniff(data)
		for _, format := range []string{"png", id} {
			if format == "" { continue }
			start := time.Now()
			img, err := decodeImageAs(context.Background(), io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), format, Limits{MaxPixels: 1 << 20})
			d := time.Since(start)
			if d > 200*time.Millisecond {
				var b any
				if img != nil { b = img.Bounds() }
				t.Logf("%s as %s: %v len=%d bounds=%v err=%v", filepath.Base(f), format, d, len(data), b, err)
			}
		}
	}
}
