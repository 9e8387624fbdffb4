package data

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"
)

// TestGenerateDataSamples rewrites the generated data samples and hostile files in testdata.
// It runs only with CONVSVC_GEN_SAMPLES=1; the files are committed, this records how they
// were made.
func TestGenerateDataSamples(t *testing.T) {
	if os.Getenv("CONVSVC_GEN_SAMPLES") == "" {
		t.Skip("set CONVSVC_GEN_SAMPLES=1 to regenerate the data samples")
	}
	data := filepath.Join("..", "..", "testdata", "data")
	hostile := filepath.Join("..", "..", "testdata", "hostile")
	write := func(path string, b []byte) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// sample.xlsx: a header row and four books, numbers as numbers.
	f := excelize.NewFile()
	sw, err := f.NewStreamWriter("Sheet1")
	if err != nil {
		t.Fatal(err)
	}
	rows := [][]any{
		{"id", "title", "author", "year", "price", "in_stock"},
		{1, "The Hobbit", "J. R. R. Tolkien", 1937, 8.99, true},
		{2, "Cien años de soledad", "Gabriel García Márquez", 1967, 12.5, false},
		{3, "Crime and Punishment, Part 1", "Fyodor Dostoevsky", 1866, 7.25, true},
		{4, `The "Little" Prince`, "Antoine de Saint-Exupéry", 1943, 6, true},
	}
	for i, r := range rows {
		cell, _ := excelize.CoordinatesToCellName(1, i+1)
		if err := sw.SetRow(cell, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.Flush(); err != nil {
		t.Fatal(err)
	}
	f.SetSheetName("Sheet1", "Books")
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(data, "sample.xlsx"), buf.Bytes())
	write(filepath.Join(hostile, "data-zipbomb.xlsx"), xlsxBomb(t, buf.Bytes()))

	// Billion laughs in YAML: nine levels of ten aliases each.
	var y strings.Builder
	y.WriteString("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		y.WriteString(name + ": &" + name + " [")
		for k := range 10 {
			if k > 0 {
				y.WriteString(",")
			}
			y.WriteString("*" + prev)
		}
		y.WriteString("]\n")
		prev = name
	}
	write(filepath.Join(hostile, "data-billion-laughs.yaml"), []byte(y.String()))

	// Billion laughs and an external entity in XML: neither may expand or read anything.
	var x strings.Builder
	x.WriteString("<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n  <!ENTITY xxe SYSTEM \"file:///etc/passwd\">\n  <!ENTITY lol \"lol\">\n")
	prev = "lol"
	for i := 1; i <= 9; i++ {
		name := "lol" + string(rune('0'+i))
		x.WriteString("  <!ENTITY " + name + " \"" + strings.Repeat("&"+prev+";", 10) + "\">\n")
		prev = name
	}
	x.WriteString("]>\n<lolz><secret>&xxe;</secret><bomb>&lol9;</bomb></lolz>\n")
	write(filepath.Join(hostile, "data-xxe.xml"), []byte(x.String()))

	write(filepath.Join(hostile, "data-deep-nesting.json"), []byte(strings.Repeat("[", 100_000)+strings.Repeat("]", 100_000)))
	write(filepath.Join(hostile, "data-ragged.csv"), []byte("a,b,c\n1,2,3\n4,5\n6,7,8\n"))
}

// xlsxBomb copies an xlsx and replaces its worksheet with a deflate stream whose headers
// claim 5 GiB: the size a real bomb of 5 MB would inflate to. Readers trust those sizes (Go's
// archive/zip refuses to inflate past them), so that is what a bomb check must look at.
func xlsxBomb(t *testing.T, src []byte) []byte {
	zr, err := zip.NewReader(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, f := range zr.File {
		if f.Name != "xl/worksheets/sheet1.xml" {
			if err := zw.Copy(f); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var comp bytes.Buffer
		fw, _ := flate.NewWriter(&comp, flate.BestCompression)
		fw.Write(bytes.Repeat([]byte("<row></row>"), 100_000))
		fw.Close()
		h := f.FileHeader
		h.Method = zip.Deflate
		h.CompressedSize64 = uint64(comp.Len())
		h.UncompressedSize64 = 5 << 30
		h.CRC32 = 0
		w, err := zw.CreateRaw(&h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(comp.Bytes())
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
