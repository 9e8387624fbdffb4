package convert

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// appendRun returns a converter body that copies its input and appends suffix, so a chained
// conversion's output shows which steps ran in which order.
func appendRun(suffix string) func(context.Context, *io.SectionReader, io.Writer, Params) error {
	return func(_ context.Context, in *io.SectionReader, out io.Writer, _ Params) error {
		if _, err := io.Copy(out, in); err != nil {
			return err
		}
		_, err := io.WriteString(out, suffix)
		return err
	}
}

// testGraph builds a catalog of formats a..g:
//
//	a -> b -> c (lossless), a -> c (lossy), c -> d (lossy), b -> e -> d (lossless, 2 steps)
//	f -> a; g is isolated.
func testGraph(t *testing.T) *Catalog {
	t.Helper()
	c := NewEmptyCatalog(Limits{})
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		c.AddFormat(Format{ID: id, Name: strings.ToUpper(id), Category: "data", Extensions: []string{id}, MIME: "x/" + id})
	}
	for _, e := range []struct {
		from, to string
		lossy    bool
	}{
		{"a", "b", false}, {"b", "c", false}, {"a", "c", true}, {"c", "d", true},
		{"b", "e", false}, {"e", "d", false}, {"f", "a", false},
	} {
		c.AddConverter(Converter{From: e.from, To: e.to, Lossy: e.lossy, Run: appendRun(">" + e.to)})
	}
	return c
}

func pathString(steps []Step) string {
	var parts []string
	for i, s := range steps {
		if i == 0 {
			parts = append(parts, s.From)
		}
		p := s.To
		if s.Lossy {
			p += "*"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ">")
}

func TestCatalog_Path(t *testing.T) {
	c := testGraph(t)
	tests := []struct {
		from, to string
		want     string // "" means ErrUnsupported
	}{
		{"a", "b", "a>b"},
		{"a", "c", "a>b>c"},     // lossless two steps beat one lossy step
		{"a", "d", "a>b>e>d"},   // three lossless steps beat a lossy one
		{"f", "d", "f>a>b>e>d"}, // chains through several converters
		{"b", "d", "b>e>d"},     // 2 lossless beat c's lossy
		{"c", "d", "c>d*"},      // the only way is lossy
		{"a", "a", ""},          // same format
		{"d", "a", ""},          // unreachable
		{"g", "a", ""},          // isolated
		{"a", "nope", ""},       // unknown target
		{"nope", "a", ""},       // unknown source
	}
	for _, tt := range tests {
		t.Run(tt.from+"-"+tt.to, func(t *testing.T) {
			steps, err := c.Path(tt.from, tt.to)
			if tt.want == "" {
				if !errors.Is(err, ErrUnsupported) {
					t.Fatalf("Path(%q, %q) = %v, %v; want ErrUnsupported", tt.from, tt.to, steps, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Path(%q, %q): %v", tt.from, tt.to, err)
			}
			if got := pathString(steps); got != tt.want {
				t.Errorf("Path(%q, %q) = %s, want %s", tt.from, tt.to, got, tt.want)
			}
		})
	}
}

// Path memoises its answers; registering a format or converter must forget them, and a
// caller changing the returned slice must not change the next answer.
func TestCatalog_Path_MemoInvalidatedByRegistration(t *testing.T) {
	c := testGraph(t)
	if _, err := c.Path("g", "a"); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("g to a before any converter: %v, want ErrUnsupported", err)
	}
	steps, err := c.Path("a", "d")
	if err != nil || pathString(steps) != "a>b>e>d" {
		t.Fatalf("a to d = %q, %v", pathString(steps), err)
	}
	steps[0].To = "x" // the caller's copy
	c.AddConverter(Converter{From: "g", To: "a", Run: appendRun(">a")})
	if steps, err := c.Path("g", "a"); err != nil || pathString(steps) != "g>a" {
		t.Fatalf("g to a after AddConverter = %q, %v", pathString(steps), err)
	}
	c.AddFormat(Format{ID: "h", Name: "H", Category: "data", Extensions: []string{"h"}, MIME: "x/h"})
	c.AddConverter(Converter{From: "a", To: "h", Run: appendRun(">h")})
	c.AddConverter(Converter{From: "h", To: "d", Run: appendRun(">d")})
	if steps, err := c.Path("a", "d"); err != nil || pathString(steps) != "a>h>d" {
		t.Fatalf("a to d after a shorter chain appeared = %q, %v", pathString(steps), err)
	}
	if steps, err := c.Path("a", "d"); err != nil || pathString(steps) != "a>h>d" {
		t.Fatalf("a to d from the memo = %q, %v", pathString(steps), err)
	}
}

func TestCatalog_Path_FewestStepsAmongEqualLossiness(t *testing.T) {
	c := NewEmptyCatalog(Limits{})
	for _, id := range []string{"a", "b", "c", "d"} {
		c.AddFormat(Format{ID: id})
	}
	c.AddConverter(Converter{From: "a", To: "b", Lossy: true, Run: appendRun("")})
	c.AddConverter(Converter{From: "b", To: "c", Run: appendRun("")})
	c.AddConverter(Converter{From: "c", To: "d", Run: appendRun("")})
	c.AddConverter(Converter{From: "a", To: "d", Lossy: true, Run: appendRun("")})
	steps, err := c.Path("a", "d")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pathString(steps), "a>d*"; got != want {
		t.Errorf("Path = %s, want %s", got, want)
	}
}

func TestCatalog_TargetsSources(t *testing.T) {
	c := testGraph(t)
	tests := []struct {
		id               string
		targets, sources []string
	}{
		{"a", []string{"b", "c", "d", "e"}, []string{"f"}},
		{"d", []string{}, []string{"a", "b", "c", "e", "f"}},
		{"f", []string{"a", "b", "c", "d", "e"}, []string{}},
		{"g", []string{}, []string{}},
		{"unknown", []string{}, []string{}},
	}
	for _, tt := range tests {
		if got := c.Targets(tt.id); !slices.Equal(got, tt.targets) {
			t.Errorf("Targets(%q) = %v, want %v", tt.id, got, tt.targets)
		}
		if got := c.Sources(tt.id); !slices.Equal(got, tt.sources) {
			t.Errorf("Sources(%q) = %v, want %v", tt.id, got, tt.sources)
		}
	}
}

func TestCatalog_Targets_CycleExcludesSelf(t *testing.T) {
	c := NewEmptyCatalog(Limits{})
	c.AddFormat(Format{ID: "x"})
	c.AddFormat(Format{ID: "y"})
	c.AddConverter(Converter{From: "x", To: "y", Run: appendRun("")})
	c.AddConverter(Converter{From: "y", To: "x", Run: appendRun("")})
	if got := c.Targets("x"); !slices.Equal(got, []string{"y"}) {
		t.Errorf("Targets(x) = %v, want [y]", got)
	}
	if got := c.Sources("x"); !slices.Equal(got, []string{"y"}) {
		t.Errorf("Sources(x) = %v, want [y]", got)
	}
}

// TestCatalog_SelfConverter: a converter from a format to itself (a transform) is the one
// path between them, and no other path goes through it.
func TestCatalog_SelfConverterLeavesOtherPaths(t *testing.T) {
	c := testGraph(t)
	if _, err := c.Path("a", "a"); err == nil {
		t.Fatal("a to a without a converter has a path")
	}
	before, _ := c.Path("a", "b")
	c.AddConverter(Converter{From: "a", To: "a", Run: appendRun("")})
	got, err := c.Path("a", "a")
	if err != nil || !slices.Equal(got, []Step{{From: "a", To: "a"}}) {
		t.Fatalf("Path(a, a) = %v, %v", got, err)
	}
	if after, _ := c.Path("a", "b"); !slices.Equal(after, before) {
		t.Fatalf("Path(a, b) changed from %v to %v", before, after)
	}
}

func TestCatalog_AddPanics(t *testing.T) {
	tests := []struct {
		name string
		f    func(c *Catalog)
	}{
		{"duplicate format", func(c *Catalog) { c.AddFormat(Format{ID: "a"}) }},
		{"empty id", func(c *Catalog) { c.AddFormat(Format{}) }},
		{"unknown from", func(c *Catalog) { c.AddConverter(Converter{From: "zz", To: "a", Run: appendRun("")}) }},
		{"unknown to", func(c *Catalog) { c.AddConverter(Converter{From: "a", To: "zz", Run: appendRun("")}) }},
		{"duplicate transform", func(c *Catalog) {
			c.AddConverter(Converter{From: "a", To: "a", Run: appendRun("")})
			c.AddConverter(Converter{From: "a", To: "a", Run: appendRun("")})
		}},
		{"nil run", func(c *Catalog) { c.AddConverter(Converter{From: "a", To: "g"}) }},
		{"duplicate converter", func(c *Catalog) { c.AddConverter(Converter{From: "a", To: "b", Run: appendRun("")}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testGraph(t)
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tt.f(c)
		})
	}
}

func writeTemp(t *testing.T, data []byte) *os.File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "input")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("scratch dir not empty: %v", entries)
	}
}

func TestCatalog_Convert_Chained(t *testing.T) {
	c := testGraph(t)
	scratch := t.TempDir()
	var out bytes.Buffer
	if _, err := c.Convert(context.Background(), "f", "d", Options{}, writeTemp(t, []byte("in")), &out, scratch); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "in>a>b>e>d"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
	assertEmptyDir(t, scratch)
}

func TestCatalog_Convert_Errors(t *testing.T) {
	sentinel := errors.New("boom")
	tests := []struct {
		name    string
		run     func(context.Context, *io.SectionReader, io.Writer, Params) error
		wantMsg string
		wantIs  error
	}{
		{"panic", func(context.Context, *io.SectionReader, io.Writer, Params) error { panic("kaboom") }, "internal error while converting b to c", nil},
		{"plain error", func(context.Context, *io.SectionReader, io.Writer, Params) error { return sentinel }, "converting b to c failed", sentinel},
		{"user error", func(context.Context, *io.SectionReader, io.Writer, Params) error {
			return &Error{Message: "input is bad"}
		}, "input is bad", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewEmptyCatalog(Limits{})
			for _, id := range []string{"a", "b", "c"} {
				c.AddFormat(Format{ID: id})
			}
			c.AddConverter(Converter{From: "a", To: "b", Run: appendRun(">b")})
			c.AddConverter(Converter{From: "b", To: "c", Run: tt.run})
			scratch := t.TempDir()
			_, err := c.Convert(context.Background(), "a", "c", Options{}, writeTemp(t, []byte("x")), io.Discard, scratch)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if ce.Message != tt.wantMsg {
				t.Errorf("Message = %q, want %q", ce.Message, tt.wantMsg)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("err does not wrap %v", tt.wantIs)
			}
			assertEmptyDir(t, scratch)
		})
	}
}

func TestCatalog_Convert_Unsupported(t *testing.T) {
	c := testGraph(t)
	_, err := c.Convert(context.Background(), "d", "a", Options{}, writeTemp(t, []byte("x")), io.Discard, t.TempDir())
	var ce *Error
	if !errors.As(err, &ce) || !errors.Is(err, ErrUnsupported) {
		t.Fatalf("err = %v, want *Error wrapping ErrUnsupported", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestCatalog_Convert_WriteError(t *testing.T) {
	c := testGraph(t)
	_, err := c.Convert(context.Background(), "a", "b", Options{}, writeTemp(t, []byte("x")), failingWriter{}, t.TempDir())
	var ce *Error
	if !errors.As(err, &ce) || ce.Message != "could not write the output" {
		t.Fatalf("err = %v, want *Error \"could not write the output\"", err)
	}
}

func TestCatalog_Convert_Cancelled(t *testing.T) {
	c := testGraph(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Convert(ctx, "a", "d", Options{}, writeTemp(t, []byte("x")), io.Discard, t.TempDir())
	var ce *Error
	if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want *Error wrapping context.Canceled", err)
	}
}

func TestCatalog_CategoryChangesBounded(t *testing.T) {
	c := NewEmptyCatalog(Limits{})
	for _, f := range []Format{
		{ID: "d1", Category: CategoryData}, {ID: "doc", Category: CategoryDocument},
		{ID: "doc2", Category: CategoryDocument}, {ID: "img", Category: CategoryImage},
	} {
		c.AddFormat(f)
	}
	c.AddConverter(Converter{From: "d1", To: "doc", Run: appendRun("x")})
	c.AddConverter(Converter{From: "doc", To: "doc2", Run: appendRun("y")})
	c.AddConverter(Converter{From: "doc2", To: "img", Run: appendRun("z")})
	if _, err := c.Path("doc", "img"); err != nil {
		t.Fatalf("one category change must be allowed: %v", err)
	}
	if _, err := c.Path("d1", "img"); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("data -> document -> image crosses twice: %v", err)
	}
	if got := c.Targets("d1"); !slices.Equal(got, []string{"doc", "doc2"}) {
		t.Fatalf("targets %v", got)
	}
	if got := c.Sources("img"); !slices.Equal(got, []string{"doc", "doc2"}) {
		t.Fatalf("sources %v", got)
	}
}

// TestCatalog_SelfConverter: a transform converter (From == To) is the path of its own pair,
// is listed among the format's targets and sources, and is never a hop of a longer chain.
func TestCatalog_SelfConverter(t *testing.T) {
	c := testGraph(t)
	c.AddConverter(Converter{From: "b", To: "b", Lossy: true, Run: appendRun(">b")})
	steps, err := c.Path("b", "b")
	if err != nil || pathString(steps) != "b>b*" {
		t.Fatalf("Path(b, b) = %q, %v; want b>b*", pathString(steps), err)
	}
	if _, err := c.Path("a", "a"); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Path(a, a) without a transform: %v, want ErrUnsupported", err)
	}
	if steps, err := c.Path("a", "c"); err != nil || pathString(steps) != "a>b>c" {
		t.Fatalf("Path(a, c) = %q, %v; want a>b>c", pathString(steps), err)
	}
	if got := c.Targets("b"); !slices.Contains(got, "b") {
		t.Errorf("Targets(b) = %v, want b among them", got)
	}
	if got := c.Targets("a"); slices.Contains(got, "a") {
		t.Errorf("Targets(a) = %v, want no a", got)
	}
	if got := c.Sources("b"); !slices.Contains(got, "b") {
		t.Errorf("Sources(b) = %v, want b among them", got)
	}
}

// TestCatalog_MaxBytes: the last step's output is held to max_bytes whatever the converter; a
// larger one fails with reason output_too_large, and one that fits goes through unchanged.
func TestCatalog_MaxBytes(t *testing.T) {
	c := testGraph(t)
	in := bytes.Repeat([]byte("x"), 4096)
	var out bytes.Buffer
	_, err := c.Convert(context.Background(), "a", "c", Options{MaxBytes: 100}, writeTemp(t, in), &out, t.TempDir())
	var ce *Error
	if !errors.As(err, &ce) || ErrorReason(err) != ReasonOutputTooLarge || !strings.Contains(ce.Message, "max_bytes 100") {
		t.Fatalf("4 KiB output, max_bytes 100: %v (reason %q)", err, ErrorReason(err))
	}
	out.Reset()
	if _, err := c.Convert(context.Background(), "a", "c", Options{MaxBytes: 4096 + 4}, writeTemp(t, in), &out, t.TempDir()); err != nil || out.Len() != 4096+4 {
		t.Fatalf("output of exactly max_bytes: %d bytes, %v", out.Len(), err)
	}
}

// TestCatalog_PathVersion: the version of a path joins its steps' converter versions, and a
// step without one makes the path unversioned (never cached).
func TestCatalog_PathVersion(t *testing.T) {
	c := NewEmptyCatalog(Limits{})
	for _, id := range []string{"a", "b", "c"} {
		c.AddFormat(Format{ID: id, Name: id, Category: CategoryData})
	}
	c.AddConverter(Converter{From: "a", To: "b", Run: appendRun(""), Version: "fam/1"})
	c.AddConverter(Converter{From: "b", To: "c", Run: appendRun(""), Version: "fam/2"})
	c.AddConverter(Converter{From: "c", To: "a", Run: appendRun("")})
	if got, ok := c.PathVersion("a", "c"); !ok || got != "a>b@fam/1 b>c@fam/2" {
		t.Errorf("PathVersion(a, c) = %q, %v; want \"a>b@fam/1 b>c@fam/2\", true", got, ok)
	}
	if got, ok := c.PathVersion("c", "a"); ok {
		t.Errorf("PathVersion(c, a) = %q, true; want false for an unversioned converter", got)
	}
	if _, ok := c.PathVersion("a", "zz"); ok {
		t.Error("PathVersion to an unknown format: ok")
	}
}
