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
