package pdfwrite

import (
	"bytes"
	"fmt"
	"testing"
)

// TestFile_CrossReferenceTable: startxref points at the table, each entry at its object (also
// after a binary stream holding "endobj" and newlines), and the trailer's /Size counts entry 0.
func TestFile_CrossReferenceTable(t *testing.T) {
	binary := []byte("\x00\xff\nendobj\n1 0 obj\r\n\x80")
	pdf := File([]byte("<</Type/Catalog/Pages 2 0 R>>"), []byte("<</Type/Pages/Kids[]/Count 0>>"),
		Stream("/Filter/FlateDecode", binary))
	tail := pdf[bytes.LastIndex(pdf, []byte("startxref\n"))+len("startxref\n"):]
	var xref int
	if _, err := fmt.Sscanf(string(tail), "%d", &xref); err != nil {
		t.Fatalf("startxref: %v", err)
	}
	if xref <= 0 || xref >= len(pdf) || !bytes.HasPrefix(pdf[xref:], []byte("xref\n0 4\n")) {
		t.Fatalf("startxref %d does not point at a table of 4 entries: %q", xref, pdf[xref:min(len(pdf), xref+12)])
	}
	entries := pdf[xref+len("xref\n0 4\n"):]
	if got := string(entries[:20]); got != "0000000000 65535 f \n" {
		t.Fatalf("entry 0 %q", got)
	}
	for n := 1; n <= 3; n++ {
		entry := string(entries[20*n : 20*n+20])
		var off int
		if _, err := fmt.Sscanf(entry, "%010d 00000 n \n", &off); err != nil {
			t.Fatalf("entry %d %q: %v", n, entry, err)
		}
		if want := fmt.Sprintf("%d 0 obj\n", n); off >= len(pdf) || !bytes.HasPrefix(pdf[off:], []byte(want)) {
			t.Fatalf("entry %d points at offset %d, not at %q", n, off, want)
		}
	}
	if !bytes.Contains(pdf[xref:], []byte("<< /Size 4 /Root 1 0 R >>")) {
		t.Fatal("the trailer's /Size is not 4")
	}
	want := append(append([]byte(fmt.Sprintf("3 0 obj\n<</Filter/FlateDecode /Length %d >>\nstream\n", len(binary))),
		binary...), "\nendstream\nendobj\n"...)
	if !bytes.Contains(pdf, want) {
		t.Fatalf("the stream object is not %q", want)
	}
}
