package svg

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/fonts"
)

// repoTestdata is the repository's testdata directory (samples and hostile files).
var repoTestdata = filepath.Join("..", "..", "..", "..", "testdata")

// hostile reads a file of testdata/hostile.
func hostile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoTestdata, "hostile", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// noFontDir searches no font directory for one test: only the embedded faces draw text.
func useFontDir(t *testing.T, dir string) {
	fonts.SetDir(dir)
	t.Cleanup(func() { fonts.SetDir(fonts.DefaultDir) })
}

// wantError fails unless err is an *Error whose message contains want.
func wantError(t *testing.T, err error, want string) {
	t.Helper()
	var ce *convert.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	if !strings.Contains(ce.Message, want) {
		t.Fatalf("message %q does not contain %q", ce.Message, want)
	}
}

// fuzzErr fails unless err is nil, an *Error or the context's.
func fuzzErr(t *testing.T, what string, err error) {
	t.Helper()
	var ce *convert.Error
	if err != nil && !errors.As(err, &ce) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s: %v is %T, not *Error", what, err, err)
	}
}

// TestSVG_IntrinsicSize reads sizes in units, from the view box alone, or neither.
func TestSVG_IntrinsicSize(t *testing.T) {
	cases := []struct {
		svg  string
		w, h float64
	}{
		{`<svg width="1in" height="72pt"/>`, 96, 96},
		{`<svg width="25.4mm" height="2.54cm"/>`, 96, 96},
		{`<svg viewBox="0 0 50 25"/>`, 50, 25},
		{`<svg width="100" viewBox="0 0 50 25"/>`, 100, 50},
		{`<svg width="100%" height="100%" viewBox="0,0,30,20"/>`, 30, 20},
		{`<svg/>`, 300, 150},
	}
	for _, tc := range cases {
		s, err := parseSVG(context.Background(), []byte(tc.svg))
		if err != nil {
			t.Errorf("%s: %v", tc.svg, err)
			continue
		}
		if diff(s.info.w, tc.w) > 1e-6 || diff(s.info.h, tc.h) > 1e-6 {
			t.Errorf("%s: %gx%g, want %gx%g", tc.svg, s.info.w, s.info.h, tc.w, tc.h)
		}
	}
	_, err := parseSVG(context.Background(), []byte(`<svg width="1e9" height="10"/>`))
	wantError(t, err, "out of range")
}

// diff is |a-b|.
func diff(a, b float64) float64 {
	if a > b {
		return a - b
	}
	return b - a
}

// TestSVG_Sanitized checks what the sanitiser leaves of the reference-laden SVG
// (testdata/hostile/doc-external-refs.svg, made by convert/document's docExternalRefsSVG).
func TestSVG_Sanitized(t *testing.T) {
	clean, _, err := svgSanitize(context.Background(), hostile(t, "doc-external-refs.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"http:", "file:", "script", "image", "foreignObject", "iframe", "@import", "DOCTYPE"} {
		if bytes.Contains(clean, []byte(bad)) {
			t.Errorf("sanitised SVG keeps %q:\n%s", bad, clean)
		}
	}
	for _, keep := range []string{"<rect", "<circle", `fill="#3366cc"`, "stroke:none"} {
		if !bytes.Contains(clean, []byte(keep)) {
			t.Errorf("sanitised SVG lost %q:\n%s", keep, clean)
		}
	}
}

// TestSVG_UseExpansion checks <use> inside <defs> is dropped and expansion is counted.
func TestSVG_UseExpansion(t *testing.T) {
	s, err := parseSVG(context.Background(), hostile(t, "doc-use-bomb.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.icon.SVGPaths); n > 10 {
		t.Errorf("%d paths drawn", n)
	}
	var b strings.Builder
	b.WriteString(`<svg><defs><g id="g">` + strings.Repeat(`<rect width="1" height="1"/>`, 1000) + `</g></defs>`)
	b.WriteString(strings.Repeat(`<use href="#g"/>`, 1000))
	b.WriteString(`</svg>`)
	_, err = parseSVG(context.Background(), []byte(b.String()))
	wantError(t, err, "once its <use> elements are expanded")
}

// FuzzSVG feeds arbitrary bytes to the SVG sanitiser, oksvg and the rasteriser: nothing may
// panic past the guards, hang or fail with anything but an *Error.
func FuzzSVG(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join(repoTestdata, "documents", "sample.svg")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := parseSVG(ctx, data)
		fuzzErr(t, "parse", err)
		if err != nil {
			return
		}
		if !(s.info.w > 0 && s.info.h > 0 && s.info.vbW > 0 && s.info.vbH > 0) {
			t.Fatalf("accepted an SVG of size %+v", s.info)
		}
		_, err = s.render(ctx, 32, 32, 32, 32, "", func(int) bool { return true })
		fuzzErr(t, "render", err)
		covered, err := s.coveredText(ctx, s.matrix(32, 32, 32, 32, ""), 32, 32)
		fuzzErr(t, "coveredText", err)
		if err == nil && len(covered) != len(s.text) {
			t.Fatalf("coveredText returned %d values for %d text segments", len(covered), len(s.text))
		}
	})
}
