package worker

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/standard"
)

// matrixSampleDirs are the testdata directories convtest.Matrix walks (convtest.SampleDirs;
// convert/internal is not importable from here).
var matrixSampleDirs = []string{"images", "documents", "data", "audio", "archives"}

// matrixPair is one conversion of the standard catalog's matrix: a sample and a target.
type matrixPair struct {
	path, from, to string
	opts           convert.Options
}

// matrixPairs lists what convtest.Matrix converts across the families (TestStandard_MatrixCovered
// holds that the families own every pair): every sample file of matrixSampleDirs whose format c
// knows, to every target its format reaches, with Matrix's options (every page for pdf -> pdf).
func matrixPairs(t *testing.T, c *convert.Catalog) []matrixPair {
	t.Helper()
	var samples []string
	for _, dir := range matrixSampleDirs {
		paths, err := filepath.Glob(filepath.Join("..", "testdata", dir, "sample*"))
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, paths...)
	}
	sort.Strings(samples)
	var pairs []matrixPair
	for _, path := range samples {
		from := c.FormatOfName(path)
		if from == "" {
			continue
		}
		for _, to := range c.Targets(from) {
			pairs = append(pairs, matrixPair{path: path, from: from, to: to, opts: matrixOptions(c, from, to)})
		}
	}
	if len(pairs) == 0 {
		t.Fatal("no samples in ../testdata")
	}
	return pairs
}

// matrixOptions are convtest.Matrix's options: none, but every page for a same-format pair
// whose only option is a page selection.
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

// TestPool_Matrix runs the conversion test matrix through worker processes (--isolation
// process): every pair the families' matrix tests convert in the test's own process
// (TestImage_Matrix, TestDocument_Matrix, TestData_Matrix, TestAudio_Matrix,
// TestArchive_Matrix, run on the catalog in process as --isolation none does) is converted here
// by a pool of workers, each a copy of this test binary running the standard catalog, and by
// the standard catalog in this process. The two outputs must be the same bytes with the same
// warnings, so each worker output passes the checks its family's matrix applies to the
// in-process one. Under -short every seventh pair of each sample directory runs (every 21st
// under -race, without the slowest pairs: slowUnderRace), so every family's samples still go
// through the workers.
func TestPool_Matrix(t *testing.T) {
	p := newPool(t, 2)
	c := standard.NewCatalog(convert.Limits{})
	pairs := matrixPairs(t, c)
	stride := 1
	if testing.Short() {
		stride = 7
		if raceEnabled {
			stride = 21
		}
	}
	ran := 0
	seen := map[string]int{} // pairs so far from each sample directory
	for _, pair := range pairs {
		dir := filepath.Base(filepath.Dir(pair.path))
		seen[dir]++
		if (seen[dir]-1)%stride != 0 || testing.Short() && raceEnabled && slowUnderRace(c, pair) {
			continue
		}
		ran++
		t.Run(filepath.Base(pair.path)+"->"+pair.to, func(t *testing.T) {
			t.Parallel()
			sample, err := os.ReadFile(pair.path)
			if err != nil {
				t.Fatal(err)
			}
			task := convert.Task{JobID: "matrix", InputFormat: pair.from, TargetFormat: pair.to, Options: pair.opts}
			var viaWorker bytes.Buffer
			wWarn, err := p.Run(context.Background(), task, inputFile(t, sample), &viaWorker, "")
			if err != nil {
				t.Fatalf("worker: convert %s -> %s: %v", pair.from, pair.to, err)
			}
			var inProcess bytes.Buffer
			pWarn, err := c.Convert(context.Background(), pair.from, pair.to, pair.opts, inputFile(t, sample), &inProcess, t.TempDir())
			if err != nil {
				t.Fatalf("in process: convert %s -> %s: %v", pair.from, pair.to, err)
			}
			if got, want := warningCodes(wWarn), warningCodes(pWarn); !slices.Equal(got, want) {
				t.Errorf("worker warned %v, in process %v", got, want)
			}
			if got, want := withoutClock(t, pair.to, viaWorker.Bytes()), withoutClock(t, pair.to, inProcess.Bytes()); !bytes.Equal(got, want) {
				i := 0
				for i < min(len(got), len(want)) && got[i] == want[i] {
					i++
				}
				t.Errorf("worker output (%d bytes) differs from the in-process one (%d bytes) from byte %d: %q against %q",
					viaWorker.Len(), inProcess.Len(), i, got[i:min(i+40, len(got))], want[i:min(i+40, len(want))])
			}
		})
	}
	t.Logf("%d of %d pairs through worker processes", ran, len(pairs))
}

// pdfDate and isoTime are the clock readings documents carry: a PDF's creation date, an
// EPUB's dcterms:modified.
var (
	pdfDate = regexp.MustCompile(`D:\d{14}[^)]*`)
	pdfRef  = regexp.MustCompile(`\b\d+ 0 (obj|R)\b`)
	isoTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
)

// withoutClock is an output of format to with the time of its conversion and the order of its
// parts taken out, so two conversions a second apart compare equal: a PDF's creation date and
// object numbers and the order of lines; an EPUB's entries (names and contents, not their zip times) with its
// modification time.
func withoutClock(t *testing.T, to string, data []byte) []byte {
	t.Helper()
	switch to {
	case "pdf":
		// fpdf numbers fonts and lists them in resource dictionaries in map order: compare
		// the sorted lines, object numbers and references taken out, without the
		// cross-reference table.
		data = pdfDate.ReplaceAll(data, []byte("D:0"))
		if i := bytes.LastIndex(data, []byte("\nxref\n")); i >= 0 {
			data = data[:i]
		}
		lines := bytes.SplitAfter(pdfRef.ReplaceAll(data, []byte("N 0 $1")), []byte("\n"))
		slices.SortFunc(lines, bytes.Compare)
		return bytes.Join(lines, nil)
	case "epub":
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("epub output is not a zip: %v", err)
		}
		var flat bytes.Buffer
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatalf("epub entry %s: %v", f.Name, err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatalf("epub entry %s: %v", f.Name, err)
			}
			fmt.Fprintf(&flat, "%s %d\n", f.Name, len(b))
			flat.Write(isoTime.ReplaceAll(b, []byte("0000-00-00T00:00:00Z")))
		}
		return flat.Bytes()
	}
	return data
}

// slowUnderRace holds the pairs that take a minute or more each under -race at load (PDFium's
// page renders of documents, the AVIF and WebP encoders): -race -short leaves them to the
// plain runs.
func slowUnderRace(c *convert.Catalog, pair matrixPair) bool {
	category := func(id string) string { f, _ := c.Format(id); return f.Category }
	if pair.to == "avif" || pair.to == "webp" {
		return true
	}
	return category(pair.from) == convert.CategoryDocument && (category(pair.to) == convert.CategoryImage || category(pair.to) == convert.CategoryArchive)
}

func warningCodes(ws []convert.Warning) []string {
	var codes []string
	for _, w := range ws {
		codes = append(codes, w.Code)
	}
	sort.Strings(codes)
	return codes
}
