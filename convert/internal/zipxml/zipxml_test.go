package zipxml

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// TestWellFormed holds the package parts' parse to matching tags, one root, and prefixes as
// written.
func TestWellFormed(t *testing.T) {
	for doc, ok := range map[string]bool{
		`<a><b/></a>`: true,
		`<?xml version="1.0"?><x:a xmlns:x="u"><x:b></x:b></x:a>`: true,
		`<a><b></a></b>`:          false,
		`<x:a xmlns:x="u"></y:a>`: false,
		`<a></a><b></b>`:          false,
		`<a><b></b>`:              false,
		`</a>`:                    false,
		``:                        false,
	} {
		if err := wellFormed(strings.NewReader(doc)); (err == nil) != ok {
			t.Errorf("%q: %v, want well-formed %v", doc, err, ok)
		}
	}
}

// zipOf writes parts (name, content) into a zip.
func zipOf(t *testing.T, parts ...string) *io.SectionReader {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for i := 0; i < len(parts); i += 2 {
		f, err := w.Create(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(parts[i+1]))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return io.NewSectionReader(bytes.NewReader(b.Bytes()), 0, int64(b.Len()))
}

// TestCheck_ContentParts reads chapters of every size through the one shared buffer: small
// ones and ones past the 64 KiB head, one after another, each closed at its end or not.
func TestCheck_ContentParts(t *testing.T) {
	chapter := func(n int, closed bool) string {
		s := `<html xmlns="http://www.w3.org/1999/xhtml"><body>` + strings.Repeat("<p>words and words</p>", n)
		if closed {
			s += "</body></html>\n"
		}
		return s
	}
	opf := `<package><manifest/></package>`
	for _, sizes := range [][]int{{1, 2}, {5000, 1}, {1, 5000}, {5000, 7000, 3}} {
		for bad := -1; bad < len(sizes); bad++ {
			parts := []string{"mimetype", "application/epub+zip", "OEBPS/content.opf", opf}
			for i, n := range sizes {
				parts = append(parts, "OEBPS/c"+strings.Repeat("x", i)+".xhtml", chapter(n, i != bad))
			}
			err := Check(context.Background(), zipOf(t, parts...), "mimetype", "OEBPS/content.opf")
			if (err == nil) != (bad < 0) {
				t.Errorf("chapters of %v paragraphs, chapter %d unclosed: %v", sizes, bad, err)
			}
		}
	}
	if err := Check(context.Background(), zipOf(t, "mimetype", "x"), "mimetype", "OEBPS/content.opf"); err == nil {
		t.Error("a zip without a required part passes")
	}
	if err := Check(context.Background(), zipOf(t, "OEBPS/content.opf", `<package><a></package>`), "OEBPS/content.opf"); err == nil {
		t.Error("a package part with a stray tag passes")
	}
}
