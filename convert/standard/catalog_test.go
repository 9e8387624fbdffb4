package standard

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

func TestCatalog_Formats(t *testing.T) {
	c := NewCatalog(convert.Limits{})
	fs := c.Formats()
	if !slices.IsSortedFunc(fs, func(a, b convert.Format) int { return strings.Compare(a.ID, b.ID) }) {
		t.Error("Formats not sorted by id")
	}
	cats := map[string]bool{}
	for _, f := range fs {
		cats[f.Category] = true
		if f.Name == "" || f.MIME == "" || len(f.Extensions) == 0 {
			t.Errorf("format %q is incomplete: %+v", f.ID, f)
		}
		for _, e := range f.Extensions {
			if strings.HasPrefix(e, ".") {
				t.Errorf("format %q extension %q has a dot", f.ID, e)
			}
		}
	}
	for _, cat := range []string{"image", "document", "data", "audio", "archive"} {
		if !cats[cat] {
			t.Errorf("no format in category %q", cat)
		}
	}
	// The result is a copy.
	fs[0].Extensions[0] = "changed"
	if f, _ := c.Format(fs[0].ID); f.Extensions[0] == "changed" {
		t.Error("Formats returned shared memory")
	}
	want := map[string]string{"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "bmp": "image/bmp", "tiff": "image/tiff", "webp": "image/webp"}
	for id, mime := range want {
		f, ok := c.Format(id)
		if !ok || f.MIME != mime || f.Category != "image" {
			t.Errorf("Format(%q) = %+v, %v", id, f, ok)
		}
	}
	if _, ok := c.Format("nope"); ok {
		t.Error("Format(nope) found")
	}
}

func TestCatalog_BuiltinGraph(t *testing.T) {
	c := NewCatalog(convert.Limits{})
	// Raster images convert directly, one decode and one encode.
	for _, from := range []string{"bmp", "gif", "jpeg", "png", "tiff", "webp"} {
		for _, to := range []string{"bmp", "gif", "jpeg", "png", "tiff"} {
			if from == to {
				continue
			}
			if steps, err := c.Path(from, to); err != nil || len(steps) != 1 {
				t.Errorf("Path(%q, %q) = %v, %v; want one step", from, to, steps, err)
			}
		}
	}
	// Recognised-only formats reach nothing and nothing reaches them.
	for _, id := range []string{"psd", "rar", "7z"} {
		if _, ok := c.Format(id); !ok {
			t.Errorf("format %q not registered", id)
		}
		if got := c.Targets(id); len(got) != 0 {
			t.Errorf("Targets(%q) = %v, want none", id, got)
		}
		if got := c.Sources(id); len(got) != 0 {
			t.Errorf("Sources(%q) = %v, want none", id, got)
		}
	}
	// One category change is fine (a document rendered to an image); two are not.
	if _, err := c.Path("markdown", "png"); err != nil {
		t.Errorf("markdown -> png: %v", err)
	}
	if _, err := c.Path("csv", "png"); !errors.Is(err, convert.ErrUnsupported) {
		t.Errorf("csv -> png crosses data -> document -> image: %v", err)
	}
	if steps, _ := c.Path("png", "jpeg"); !steps[0].Lossy {
		t.Error("png to jpeg not marked lossy")
	}
	if steps, _ := c.Path("jpeg", "png"); steps[0].Lossy {
		t.Error("jpeg to png marked lossy")
	}
}

func TestCatalog_ImagesStopAfterLeavingTheirCategory(t *testing.T) {
	c := NewCatalog(convert.Limits{})
	if _, err := c.Path("png", "pdf"); err != nil {
		t.Fatalf("png -> pdf: %v", err)
	}
	if _, err := c.Path("gif", "pdf"); err != nil {
		t.Fatalf("gif -> png -> pdf stays in images until the last step: %v", err)
	}
	for _, to := range []string{"txt", "html", "markdown"} {
		if _, err := c.Path("png", to); !errors.Is(err, convert.ErrUnsupported) {
			t.Errorf("png -> pdf -> %s would pretend to convert: %v", to, err)
		}
	}
	if _, err := c.Path("csv", "pdf"); err != nil {
		t.Errorf("csv -> html -> pdf is a real table rendering: %v", err)
	}
}
