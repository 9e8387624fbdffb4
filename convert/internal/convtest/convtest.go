// Package convtest holds the test helpers the converter families share: temporary inputs,
// user-error assertions, fuzz seeds from testdata, a converter benchmark loop, the warnings
// table check (CheckWarnings), and the conversion matrix each family runs for the pairs
// whose outputs it knows how to check.
// It imports only the kernel, so every family's tests may use it.
package convtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
)

// Testdata is the repository's testdata directory as seen from a family's package directory.
var Testdata = filepath.Join("..", "..", "testdata")

// WriteTemp writes data to a file in t.TempDir and returns it open for reading.
func WriteTemp(t testing.TB, data []byte) *os.File {
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

// OpenFile opens path for the rest of the test.
func OpenFile(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// BytesSection returns b as a section reader, the input type of a converter's Run.
func BytesSection(b []byte) *io.SectionReader {
	return io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b)))
}

// RequireUserError fails unless err is nil or an *Error: whatever the input, a converter
// reports problems the user can read, and never panics.
func RequireUserError(t testing.TB, err error) {
	t.Helper()
	var ce *convert.Error
	if err != nil && !errors.As(err, &ce) {
		t.Fatalf("error %v is %T, not *Error", err, err)
	}
}

// WantUserError checks that err is an *Error whose message contains want.
func WantUserError(t testing.TB, err error, want string) {
	t.Helper()
	var ce *convert.Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v (%T), want an *Error containing %q", err, err, want)
	}
	if !strings.Contains(ce.Message, want) {
		t.Fatalf("message %q does not contain %q", ce.Message, want)
	}
}

// AddFuzzSamples seeds f with the files of testdata/dir matching pattern (those under 64 KiB).
func AddFuzzSamples(f *testing.F, dir, pattern string) {
	paths, _ := filepath.Glob(filepath.Join(Testdata, dir, pattern))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
}

// BenchConverter measures one converter on in-memory input, reporting input MB/s and output size.
func BenchConverter(b *testing.B, run func(context.Context, *io.SectionReader, io.Writer, convert.Params) error, input []byte) {
	b.Helper()
	b.ReportAllocs()
	b.SetBytes(int64(len(input)))
	var out convert.CountingWriter
	out.W = io.Discard
	for b.Loop() {
		out.N = 0
		if err := run(context.Background(), io.NewSectionReader(bytes.NewReader(input), 0, int64(len(input))), &out, convert.Params{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(out.N), "out-bytes")
}

// RunCatalog runs one conversion of c on in-memory input.
func RunCatalog(t testing.TB, c *convert.Catalog, from, to string, input []byte) ([]byte, error) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "in")
	if err := os.WriteFile(p, input, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	_, err = c.Convert(context.Background(), from, to, convert.Options{}, f, &out, dir)
	return out.Bytes(), err
}

// SampleDirs hold the real samples of every input format: files named sample*.<extension>.
var SampleDirs = []string{"images", "documents", "data", "audio", "archives"}

// Samples returns every sample file in SampleDirs, sorted.
func Samples() []string {
	var samples []string
	for _, dir := range SampleDirs {
		paths, _ := filepath.Glob(filepath.Join(Testdata, dir, "sample*"))
		samples = append(samples, paths...)
	}
	sort.Strings(samples)
	return samples
}

// FormatOfSample maps a sample file to its format in c by the longest matching extension.
func FormatOfSample(c *convert.Catalog, path string) string {
	return c.FormatOfName(path)
}

// Checker checks one conversion's output file against its source sample.
type Checker func(t *testing.T, source, output string)

// Matrix converts every sample whose format c knows to every target its format reaches, for
// the pairs owns accepts, and checks each output with checkers[to]. Each family runs it for
// the pairs whose outputs its tests can read back (see docs/architecture.md), so that together
// the families cover every pair of the standard catalog; the standard package checks that every
// convertible format has a sample. Under -short three targets per sample are tried.
func Matrix(t *testing.T, c *convert.Catalog, owns func(from, to string) bool, checkers map[string]Checker) {
	for _, path := range Samples() {
		from := FormatOfSample(c, path)
		if from == "" {
			continue
		}
		var targets []string
		for _, to := range c.Targets(from) {
			if owns(from, to) {
				targets = append(targets, to)
			}
		}
		if testing.Short() && len(targets) > 3 {
			// -short (the race run in CI): three targets per sample still reach every family's
			// code; the full matrix runs in the plain test run.
			targets = []string{targets[0], targets[len(targets)/2], targets[len(targets)-1]}
		}
		for _, to := range targets {
			t.Run(filepath.Base(path)+"->"+to, func(t *testing.T) {
				t.Parallel()
				check := checkers[to]
				if check == nil {
					t.Fatalf("no output checker registered for %s", to)
				}
				out := filepath.Join(t.TempDir(), "out")
				f, err := os.Create(out)
				if err != nil {
					t.Fatal(err)
				}
				in, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer in.Close()
				warnings, err := c.Convert(context.Background(), from, to, matrixOptions(c, from, to), in, f, t.TempDir())
				f.Close()
				if err != nil {
					t.Fatalf("convert %s -> %s: %v", from, to, err)
				}
				CheckDeclaredWarnings(t, c, from, to, warnings)
				CheckVerifier(t, c, from, to, matrixOptions(c, from, to), path, out)
				check(t, path, out)
			})
		}
	}
}

// CheckVerifier holds the output check of a conversion from -> to with opts (input at inPath,
// output at outPath) to its word: the real output passes (Catalog.Verify), and the output cut
// to half its length fails with error_reason output_invalid. Formats without a check pass
// unchecked.
func CheckVerifier(t testing.TB, c *convert.Catalog, from, to string, opts convert.Options, inPath, outPath string) {
	t.Helper()
	if !c.Verifies(to, opts) {
		return
	}
	in, err := os.Open(inPath)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := c.Verify(context.Background(), from, to, opts, in, bytes.NewReader(out), int64(len(out)))
	if err != nil || !ok {
		t.Fatalf("the output of %s -> %s (%d bytes) fails its check: verified %v, %v", from, to, len(out), ok, err)
	}
	half := out[:len(out)/2]
	ok, err = c.Verify(context.Background(), from, to, opts, in, bytes.NewReader(half), int64(len(half)))
	if ok || convert.ErrorReason(err) != convert.ReasonOutputInvalid || !errors.Is(err, convert.ErrOutputInvalid) {
		t.Fatalf("the output of %s -> %s cut to %d of %d bytes passes its check: verified %v, %v", from, to, len(half), len(out), ok, err)
	}
}

// matrixOptions are the options a matrix pair runs with: none, but for a same-format pair whose
// only changing option is a page selection (pdf -> pdf), every page.
func matrixOptions(c *convert.Catalog, from, to string) convert.Options {
	if from != to {
		return convert.Options{}
	}
	f, _ := c.Format(to)
	if names := convert.SameFormatOptions(f); len(names) == 1 && names[0] == convert.OptPages {
		return convert.Options{Pages: "all"}
	}
	return convert.Options{}
}

// CheckDeclaredWarnings fails the test when a conversion reported a warning that no converter
// of its path declares in Converter.Drops (which docs/formats.md shows), or one without a
// message.
func CheckDeclaredWarnings(t testing.TB, c *convert.Catalog, from, to string, warnings []convert.Warning) {
	t.Helper()
	steps, err := c.Path(from, to)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, s := range steps {
		cv, _ := c.ConverterFor(s)
		declared = append(declared, cv.Drops...)
	}
	for _, w := range warnings {
		if !slices.Contains(declared, w.Code) || w.Message == "" {
			t.Errorf("%s -> %s reported %+v, which its converters do not declare (Drops: %v)", from, to, w, declared)
		}
	}
}

// WaitFor polls cond until it holds, failing the test after a generous 5 s: tests wait on
// state, never on a fixed sleep.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
