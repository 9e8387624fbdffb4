package document

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
)

// docFuzzErr fails unless err is nil, an *Error or the context's.
func docFuzzErr(t *testing.T, what string, err error) {
	t.Helper()
	var ce *convert.Error
	if err != nil && !errors.As(err, &ce) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s: %v is %T, not *Error", what, err, err)
	}
}

// FuzzSVG feeds arbitrary bytes to the SVG sanitiser, oksvg and the rasteriser: nothing may
// panic past the guards, hang or fail with anything but an *Error.
func FuzzSVG(f *testing.F) {
	for _, name := range []string{"sample.svg"} {
		if b, err := os.ReadFile(docPath(name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := parseSVG(ctx, data)
		docFuzzErr(t, "parse", err)
		if err != nil {
			return
		}
		if !(s.info.w > 0 && s.info.h > 0 && s.info.vbW > 0 && s.info.vbH > 0) {
			t.Fatalf("accepted an SVG of size %+v", s.info)
		}
		_, err = s.render(ctx, 32, 32, 32, 32, "", func(int) bool { return true })
		docFuzzErr(t, "render", err)
		covered, err := s.coveredText(ctx, s.matrix(32, 32, 32, 32, ""), 32, 32)
		docFuzzErr(t, "coveredText", err)
		if err == nil && len(covered) != len(s.text) {
			t.Fatalf("coveredText returned %d values for %d text segments", len(covered), len(s.text))
		}
	})
}

// FuzzDocx feeds arbitrary bytes to the DOCX reader and its HTML and text writers.
func FuzzDocx(f *testing.F) {
	if b, err := os.ReadFile(docPath("sample.docx")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		d, err := readDOCX(ctx, io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))))
		docFuzzErr(t, "read", err)
		if err != nil {
			return
		}
		_ = docxBodyHTML(d)
		w := &mdTextWriter{ctx: ctx, w: bufio.NewWriter(io.Discard)}
		docxText(w, d.blocks, "")
		if w.err != nil {
			t.Fatal(w.err)
		}
	})
}

// FuzzMarkdown feeds arbitrary Markdown through the guard, goldmark, the text writer and,
// for small inputs, the PDF layout.
func FuzzMarkdown(f *testing.F) {
	if b, err := os.ReadFile(docPath("sample.md")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		src, err := decodeText(data, fmtMarkdown)
		docFuzzErr(t, "decode", err)
		if err != nil {
			return
		}
		doc, err := parseMarkdown(ctx, src)
		docFuzzErr(t, "parse", err)
		if err != nil {
			return
		}
		if err := writeMarkdownText(ctx, io.Discard, doc, src); err != nil {
			t.Fatal(err)
		}
		if _, err := renderMarkdownHTML(doc, src); err != nil {
			t.Fatal(err)
		}
		if len(src) < 4096 {
			err := markdownPDF(ctx, io.Discard, doc, src, convert.Params{Limits: convert.Limits{MaxPixels: 1 << 20}})
			docFuzzErr(t, "pdf", err)
		}
	})
}

// FuzzHTML feeds arbitrary HTML through cleaning, the Markdown converter and the EPUB writer.
func FuzzHTML(f *testing.F) {
	if b, err := os.ReadFile(docPath("sample.html")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "in.html")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		in, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		sr := io.NewSectionReader(in, 0, int64(len(data)))
		err = htmlToMarkdown(ctx, sr, io.Discard, convert.Params{})
		docFuzzErr(t, "markdown", err)
		if err != nil {
			return
		}
		docFuzzErr(t, "epub", htmlToEPUB(ctx, sr, io.Discard, convert.Params{}))
	})
}
