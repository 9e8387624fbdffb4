package testpdf

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestPDF: every cross-reference entry points at its object's "N 0 obj", startxref points at
// the table, and the trailer counts the objects and the free entry 0.
func TestPDF(t *testing.T) {
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] /Contents 4 0 R >>", Stream("0 0 1 rg 10 10 50 50 re f")}
	pdf := PDF(objs...)
	if !bytes.HasPrefix(pdf, []byte("%PDF-1.4\n")) || !bytes.HasSuffix(pdf, []byte("%%EOF\n")) {
		t.Fatalf("header or end missing:\n%s", pdf)
	}
	sx := bytes.LastIndex(pdf, []byte("startxref\n"))
	xref, err := strconv.Atoi(strings.Fields(string(pdf[sx+len("startxref\n"):]))[0])
	if err != nil || !bytes.HasPrefix(pdf[xref:], []byte("xref\n0 5\n0000000000 65535 f \n")) {
		t.Fatalf("startxref %d (%v) does not point at a table of 5 entries:\n%s", xref, err, pdf)
	}
	lines := strings.Split(string(pdf[xref:]), "\n")[3 : 3+len(objs)]
	for i, line := range lines {
		off, err := strconv.Atoi(line[:10])
		want := fmt.Sprintf("%d 0 obj\n%s\nendobj\n", i+1, objs[i])
		if err != nil || !strings.HasSuffix(line, " 00000 n ") || !bytes.HasPrefix(pdf[off:], []byte(want)) {
			t.Fatalf("entry %d %q does not point at object %d", i+1, line, i+1)
		}
	}
	if !bytes.Contains(pdf, []byte("trailer\n<< /Size 5 /Root 1 0 R >>\n")) {
		t.Fatalf("trailer:\n%s", pdf)
	}
	if got := Stream("abc"); got != "<< /Length 3 >>\nstream\nabc\nendstream" {
		t.Fatalf("Stream: %q", got)
	}
}
