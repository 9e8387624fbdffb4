package pdfium

import (
	"bytes"
	"context"
	"image"
	"io"
	"testing"
)

// TestWarmUp_BlankPDFRenders holds warmUp to calls that reach PDFium: blankPDF opens with one
// page, which renders (a warm-up whose PDF failed to open would make no call and warm nothing).
func TestWarmUp_BlankPDFRenders(t *testing.T) {
	s, err := open(context.Background(), io.NewSectionReader(bytes.NewReader(blankPDF), 0, int64(len(blankPDF))))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Pages() != 1 {
		t.Fatalf("%d pages, want 1", s.Pages())
	}
	var size image.Point
	if err := s.Render(0, 72, func(img image.Image) error { size = img.Bounds().Size(); return nil }); err != nil {
		t.Fatal(err)
	}
	if size != (image.Point{72, 72}) {
		t.Fatalf("rendered %v, want 72x72", size)
	}
}
