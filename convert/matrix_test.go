package convert

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// outputCheckers verify a conversion result by reading it back as its format: dimensions, page
// count, rows, samples or entry names against the source. Each family's test file registers
// its formats in init(). A target without a checker fails the matrix.
var (
	outputCheckersMu sync.Mutex
	outputCheckers   = map[string]func(t *testing.T, source, output string){}
)

// registerOutputChecker is called from init() of each family's tests.
func registerOutputChecker(format string, check func(t *testing.T, source, output string)) {
	outputCheckersMu.Lock()
	defer outputCheckersMu.Unlock()
	outputCheckers[format] = check
}

// sampleDirs hold the real samples of every input format: files named sample*.<extension>.
var sampleDirs = []string{"images", "documents", "data", "audio", "archives"}

// formatOfSample maps a sample file to its format by the longest matching extension.
func formatOfSample(c *Catalog, path string) string {
	name := strings.ToLower(filepath.Base(path))
	best, bestLen := "", 0
	for _, f := range c.Formats() {
		for _, ext := range f.Extensions {
			if strings.HasSuffix(name, "."+ext) && len(ext) > bestLen {
				best, bestLen = f.ID, len(ext)
			}
		}
	}
	return best
}

// TestCatalog_Matrix converts every sample in testdata to every target its format reaches and
// checks each output by reading it back. Every convertible input format needs a sample.
func TestCatalog_Matrix(t *testing.T) {
	c := NewCatalog(Limits{})
	covered := map[string]bool{}
	var samples []string
	for _, dir := range sampleDirs {
		paths, _ := filepath.Glob(filepath.Join("..", "testdata", dir, "sample*"))
		samples = append(samples, paths...)
	}
	sort.Strings(samples)
	for _, path := range samples {
		from := formatOfSample(c, path)
		if from == "" {
			t.Errorf("%s: no format has its extension", path)
			continue
		}
		covered[from] = true
		targets := c.Targets(from)
		if testing.Short() && len(targets) > 3 {
			// -short (the race run in CI): three targets per sample still reach every family's
			// code; the full matrix runs in the plain test run.
			targets = []string{targets[0], targets[len(targets)/2], targets[len(targets)-1]}
		}
		for _, to := range targets {
			t.Run(filepath.Base(path)+"->"+to, func(t *testing.T) {
				t.Parallel()
				check := outputCheckers[to]
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
				err = c.Convert(context.Background(), from, to, Options{}, in, f, t.TempDir())
				f.Close()
				if err != nil {
					t.Fatalf("convert %s -> %s: %v", from, to, err)
				}
				check(t, path, out)
			})
		}
	}
	for _, f := range c.Formats() {
		if len(c.Targets(f.ID)) > 0 && !covered[f.ID] {
			t.Errorf("format %s converts to %v but has no sample in testdata/{%s}", f.ID, c.Targets(f.ID), strings.Join(sampleDirs, ","))
		}
	}
}
