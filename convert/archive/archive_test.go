package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/cputime"
	"github.com/klauspost/compress/gzip"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
)

// TestArchive_Matrix converts every sample to every archive format it reaches (pdf reaches zip
// through the document family's page archive) and lists each output (the archive part of the
// standard catalog's conversion matrix).
func TestArchive_Matrix(t *testing.T) {
	checkers := map[string]convtest.Checker{}
	for _, f := range archiveFormats {
		checkers[f.id] = checkArchiveOutput(f.id)
	}
	owns := func(_, to string) bool { return checkers[to] != nil }
	// Documents reach the archives through PDFium's page renders (pdf -> zip). wazero caches a
	// function type's key on its first call without a lock, so two first renders at once are a
	// data race inside wazero that -race reports: render once before the parallel pairs.
	pdf, err := os.ReadFile(filepath.Join(convtest.Testdata, "documents", "sample.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := convtest.RunCatalog(t, testCatalog(), "pdf", "zip", pdf); err != nil {
		t.Fatal(err)
	}
	convtest.Matrix(t, testCatalog(), owns, checkers)
}

// listedEntry is what the checkers compare: name, kind, permissions, time and content.
type listedEntry struct {
	name    string
	mode    fs.FileMode
	modTime int64
	data    string
}

func listArchive(t testing.TB, id string, data []byte) []listedEntry {
	t.Helper()
	in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
	next, closeFn, err := openArchive(context.Background(), id, in, newArchiveBudget(in.Size()))
	if err != nil {
		t.Fatalf("reading %s: %v", id, err)
	}
	defer closeFn()
	var out []listedEntry
	for {
		e, err := next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reading %s: %v", id, err)
		}
		le := listedEntry{name: e.name, mode: e.mode, modTime: e.modTime.Unix()}
		if !e.dir {
			b, err := io.ReadAll(e.body)
			if err != nil {
				t.Fatalf("reading %s entry %s: %v", id, e.name, err)
			}
			le.data = string(b)
		}
		out = append(out, le)
	}
}

// checkArchiveOutput reads the output back and compares its entries with the source's.
func checkArchiveOutput(to string) func(t *testing.T, source, output string) {
	return func(t *testing.T, source, output string) {
		t.Helper()
		out, err := os.ReadFile(output)
		if err != nil {
			t.Fatal(err)
		}
		got := listArchive(t, to, out)
		from := convtest.FormatOfSample(testCatalog(), source)
		if !slices.ContainsFunc(archiveFormats, func(f struct{ id, name string }) bool { return f.id == from }) {
			if len(got) == 0 {
				t.Fatal("empty archive")
			}
			return
		}
		src, err := os.ReadFile(source)
		if err != nil {
			t.Fatal(err)
		}
		want := listArchive(t, from, src)
		if !slices.Equal(got, want) {
			t.Fatalf("entries differ:\ngot  %+v\nwant %+v", got, want)
		}
	}
}

func archiveConvert(t *testing.T, from, to string, data []byte) ([]byte, error) {
	t.Helper()
	var out bytes.Buffer
	err := archiveRun(from, to)(context.Background(), io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), &out, convert.Params{})
	return out.Bytes(), err
}

func TestArchive_StandardToolsRead(t *testing.T) {
	// Outputs read with the standard library alone, not our own readers.
	src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "archives", "sample.tar"))
	if err != nil {
		t.Fatal(err)
	}
	z, err := archiveConvert(t, "tar", "zip", src)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if f.Name == "project/bin/run.sh" && f.Mode().Perm() != 0o755 {
			t.Errorf("run.sh mode %v", f.Mode())
		}
	}
	want := []string{"project/", "project/numbers.csv", "project/bin/", "project/bin/run.sh", "project/docs/", "project/docs/readme.txt", "project/docs/notes/", "project/docs/notes/todo.md", "project/empty/"}
	if !slices.Equal(names, want) {
		t.Fatalf("zip names %q, want %q", names, want)
	}
	g, err := archiveConvert(t, "zip", "tgz", z)
	if err != nil {
		t.Fatal(err)
	}
	gr, err := gzip.NewReader(bytes.NewReader(g))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gr)
	names = nil
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == "project/docs/readme.txt" {
			b, _ := io.ReadAll(tr)
			if string(b) != "Sample archive for convsvc tests.\n" || h.ModTime.Unix() != time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Unix() {
				t.Errorf("readme %q at %v", b, h.ModTime)
			}
		}
	}
	if !slices.Equal(names, want) {
		t.Fatalf("tar names %q, want %q", names, want)
	}
}

// zipOf builds a zip from name/content pairs; names ending in "/" are directories.
func zipOf(t *testing.T, entries ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i < len(entries); i += 2 {
		w, err := zw.Create(entries[i])
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, entries[i+1])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tarOf builds a tar from headers, each followed by its content.
func tarOf(t *testing.T, hs ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hs {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipOf(t testing.TB, data []byte) []byte {
	var buf bytes.Buffer
	gw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	gw.Write(data)
	gw.Close()
	return buf.Bytes()
}

func TestArchive_UnsafeEntries(t *testing.T) {
	tests := []struct {
		name, from string
		data       []byte
		want       string
	}{
		{"zip slip", "zip", zipOf(t, "ok.txt", "a", "../evil.txt", "x"), `archive entry "../evil.txt" climbs out of the archive's root with ".."`},
		{"zip slip inside", "zip", zipOf(t, "a/../../evil.txt", "x"), `climbs out of the archive's root`},
		{"zip backslash slip", "zip", zipOf(t, `..\evil.txt`, "x"), `archive entry "..\\evil.txt" climbs out`},
		{"zip absolute", "zip", zipOf(t, "/etc/passwd", "x"), `archive entry "/etc/passwd" has an absolute path`},
		{"zip drive", "zip", zipOf(t, `C:\Windows\evil.dll`, "x"), `has an absolute path`},
		{"tar absolute", "tar", tarOf(t, &tar.Header{Name: "/etc/cron.d/evil", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}), `archive entry "/etc/cron.d/evil" has an absolute path`},
		{"tar symlink", "tar", tarOf(t, &tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}), `archive entry "link" is a symbolic link (to "/etc/passwd"), which is not allowed`},
		{"tar hardlink", "tar", tarOf(t, &tar.Header{Name: "hl", Typeflag: tar.TypeLink, Linkname: "/etc/shadow"}), `archive entry "hl" is a hard link`},
		{"tar device", "tar", tarOf(t, &tar.Header{Name: "sda", Typeflag: tar.TypeBlock, Devmajor: 8}), `archive entry "sda" is a device file`},
		{"tar fifo", "tar", tarOf(t, &tar.Header{Name: "p", Typeflag: tar.TypeFifo}), `archive entry "p" is a FIFO`},
		{"tgz slip", "tgz", gzipOf(t, tarOf(t, &tar.Header{Name: "../../x", Typeflag: tar.TypeReg, Size: 1})), `climbs out`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, to := range []string{"zip", "tar", "tgz", "tzst"} {
				if to == tt.from {
					continue
				}
				_, err := archiveConvert(t, tt.from, to, tt.data)
				convtest.WantUserError(t, err, tt.want)
			}
		})
	}
	// A zip symlink (Unix mode in the external attributes).
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "link"}
	h.SetMode(fs.ModeSymlink | 0o777)
	w, _ := zw.CreateHeader(h)
	io.WriteString(w, "/etc/passwd")
	zw.Close()
	_, err := archiveConvert(t, "zip", "tar", buf.Bytes())
	convtest.WantUserError(t, err, `archive entry "link" is a symbolic link`)
}

func TestArchive_NamesCleaned(t *testing.T) {
	in := tarOf(t,
		&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755},
		&tar.Header{Name: "./a//b/./c.txt", Typeflag: tar.TypeReg, Size: 2, Mode: 0o600},
		&tar.Header{Name: "d", Typeflag: tar.TypeDir, Mode: 0o700},
	)
	out, err := archiveConvert(t, "tar", "zip", in)
	if err != nil {
		t.Fatal(err)
	}
	got := listArchive(t, "zip", out)
	if len(got) != 2 || got[0].name != "a/b/c.txt" || got[0].mode != 0o600 || got[1].name != "d/" || got[1].mode != 0o700 {
		t.Fatalf("got %+v", got)
	}
}

// overlappingZip makes a zip whose second central directory entry points at the first
// entry's data: the building block of non-recursive zip bombs.
func overlappingZip(t *testing.T) []byte {
	z := zipOf(t, "a.txt", strings.Repeat("a", 1000), "b.txt", strings.Repeat("b", 1000))
	cd := bytes.LastIndex(z, []byte("PK\x01\x02")) // b.txt's record
	binary.LittleEndian.PutUint32(z[cd+42:], 0)    // its local header offset: a.txt's
	return z
}

func TestArchive_Hostile(t *testing.T) {
	tests := []struct {
		file, from, want string
		data             []byte
	}{
		{"archive-zipslip.zip", "zip", `archive entry "../evil.txt" climbs out of the archive's root`, nil},
		{"archive-absolute.tar", "tar", `archive entry "/tmp/evil.sh" has an absolute path`, nil},
		{"archive-symlink.tar", "tar", `archive entry "project/passwd" is a symbolic link (to "/etc/passwd")`, nil},
		{"archive-bomb.zip", "zip", "archive states it expands to more than 64 MiB when unpacked", nil},
		{"archive-gzip-bomb.tar.gz", "tgz", `archive entry "zeros.bin" is 3 GiB when unpacked, over the 2 GiB limit for one entry`, nil},
		{"overlapping zip", "zip", `archive entries "a.txt" and "b.txt" share their data`, overlappingZip(t)},
		{"tar as zip", "zip", "input is not a valid ZIP file (it looks like tar)", tarOf(t, &tar.Header{Name: "a", Typeflag: tar.TypeReg, Size: 1})},
		{"zip as tgz", "tgz", "input is not a valid tar.gz file (it looks like ZIP)", zipOf(t, "a", "b")},
		{"gzip of text", "tgz", "input is a gzip file, but what it holds is not a tar archive (it looks like text)", gzipOf(t, []byte("hello, this is not a tar file at all"))},
		{"truncated tgz", "tgz", "input is not a valid tar.gz file (it is truncated)", func() []byte {
			g, _ := os.ReadFile(filepath.Join("..", "..", "testdata", "archives", "sample.tar.gz"))
			return g[:len(g)/2]
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data := tt.data
			if data == nil {
				var err error
				if data, err = os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", tt.file)); err != nil {
					t.Fatal(err)
				}
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := cputime.Self() // CPU, not wall time: the machine may be busy (issue 24)
			_, err := archiveConvert(t, tt.from, "tar", data)
			if tt.from == "tar" {
				_, err = archiveConvert(t, tt.from, "zip", data)
			}
			elapsed := cputime.Self() - start
			runtime.ReadMemStats(&after)
			convtest.WantUserError(t, err, tt.want)
			if elapsed > 3*time.Second {
				t.Errorf("took %v of CPU", elapsed)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
				t.Errorf("allocated %d KB", alloc>>10)
			}
		})
	}
}

func TestArchive_NestedZipIsNotUnpacked(t *testing.T) {
	// 42.zip-style nesting: inner archives are entries like any other, copied, not opened.
	inner := zipOf(t, "zeros", strings.Repeat("\x00", 1<<20))
	for range 3 {
		inner = zipOf(t, "a.zip", string(inner), "b.zip", string(inner))
	}
	start := cputime.Self() // CPU, not wall time: the machine may be busy (issue 24)
	out, err := archiveConvert(t, "zip", "tgz", inner)
	if err != nil {
		t.Fatal(err)
	}
	if cpu := cputime.Self() - start; len(out) > 4*len(inner) || cpu > time.Second*convtest.RaceSlowdown {
		t.Fatalf("%d bytes in, %d out, %v of CPU", len(inner), len(out), cpu)
	}
}

func TestArchive_ExpansionCountedAsItHappens(t *testing.T) {
	// A zip whose central directory understates an entry: archive/zip refuses to inflate past
	// the stated size, so the lie ends in an error, not in an unbounded copy.
	z := zipOf(t, "big", strings.Repeat("z", 100_000))
	cd := bytes.LastIndex(z, []byte("PK\x01\x02"))
	binary.LittleEndian.PutUint32(z[cd+24:], 10) // uncompressed size
	_, err := archiveConvert(t, "zip", "tar", z)
	convtest.WantUserError(t, err, `archive entry "big" is damaged`)
}

func TestArchive_Limits(t *testing.T) {
	if got := newArchiveBudget(1000).limit; got != ArchiveMinBudget {
		t.Errorf("budget of a small input %d", got)
	}
	if got := newArchiveBudget(10 << 20).limit; got != 1000<<20 {
		t.Errorf("budget of 10 MiB %d", got)
	}
	if got := newArchiveBudget(2_000_000_000).limit; got != ArchiveMaxTotalBytes {
		t.Errorf("budget of 2 GB %d", got)
	}
	// Entry count.
	hs := make([]*tar.Header, 0, 10)
	for i := range 10 {
		hs = append(hs, &tar.Header{Name: fmt.Sprint(i), Typeflag: tar.TypeReg, Size: 0})
	}
	b := &archiveBudget{limit: 1 << 20, entries: ArchiveMaxEntries - 5}
	in := tarOf(t, hs...)
	next, _, err := openArchive(context.Background(), "tar", io.NewSectionReader(bytes.NewReader(in), 0, int64(len(in))), b)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err = next(); err != nil {
			break
		}
	}
	convtest.WantUserError(t, err, "archive has more than 100000 entries")
}

func TestArchive_Cancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	data, _ := os.ReadFile(filepath.Join("..", "..", "testdata", "archives", "sample.zip"))
	err := archiveRun("zip", "tzst")(ctx, io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), io.Discard, convert.Params{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// TestGenerateArchiveHostile rewrites the archive hostile samples (CONVSVC_GEN_SAMPLES=1).
func TestGenerateArchiveHostile(t *testing.T) {
	if os.Getenv("CONVSVC_GEN_SAMPLES") == "" {
		t.Skip("set CONVSVC_GEN_SAMPLES=1 to regenerate the archive hostile samples")
	}
	dir := filepath.Join("..", "..", "testdata", "hostile")
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("archive-zipslip.zip", zipOf(t, "notes.txt", "harmless\n", "../evil.txt", "owned\n"))
	write("archive-absolute.tar", tarOf(t, &tar.Header{Name: "/tmp/evil.sh", Typeflag: tar.TypeReg, Size: 4, Mode: 0o755}))
	write("archive-symlink.tar", tarOf(t,
		&tar.Header{Name: "project/", Typeflag: tar.TypeDir, Mode: 0o755},
		&tar.Header{Name: "project/passwd", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}))

	// A single entry of 200 MB of zeros: about 200 KB deflated.
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "zeros.bin", Method: zip.Deflate})
	zero := make([]byte, 1<<20)
	for range 200 {
		w.Write(zero)
	}
	zw.Close()
	write("archive-bomb.zip", zb.Bytes())

	// A tar.gz whose one entry is 3 GiB of zeros, cut after its first 16 MiB: the header alone
	// must be enough to refuse it.
	var tb bytes.Buffer
	gw, _ := gzip.NewWriterLevel(&tb, gzip.BestCompression)
	tw := tar.NewWriter(gw)
	tw.WriteHeader(&tar.Header{Name: "zeros.bin", Typeflag: tar.TypeReg, Size: 3 << 30, Mode: 0o644})
	for range 16 {
		tw.Write(zero)
	}
	gw.Close() // without closing tw: the tar is cut short
	write("archive-gzip-bomb.tar.gz", tb.Bytes())
}
