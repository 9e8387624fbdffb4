package image

import (
	"image"
	"testing"
)

// orient puts each stored pixel where the EXIF orientation says the displayed one is: for a
// 3x2 image whose pixel (x, y) holds 10*x+y, the displayed 0th row and column read as below.
func TestOrient(t *testing.T) {
	src := image.NewRGBA(image.Rect(0, 0, 3, 2))
	for y := 0; y < 2; y++ {
		for x := 0; x < 3; x++ {
			src.Pix[src.PixOffset(x, y)] = byte(10*x + y)
		}
	}
	for _, tc := range []struct {
		orientation int
		size        image.Point
		row0        []byte // the displayed top row, left to right
	}{
		{1, image.Pt(3, 2), []byte{0, 10, 20}},
		{2, image.Pt(3, 2), []byte{20, 10, 0}}, // mirrored left to right
		{3, image.Pt(3, 2), []byte{21, 11, 1}}, // half turn
		{4, image.Pt(3, 2), []byte{1, 11, 21}}, // mirrored top to bottom
		{5, image.Pt(2, 3), []byte{0, 1}},      // transposed
		{6, image.Pt(2, 3), []byte{1, 0}},      // turned clockwise
		{7, image.Pt(2, 3), []byte{21, 20}},    // transversed
		{8, image.Pt(2, 3), []byte{20, 21}},    // turned anticlockwise
	} {
		got := orient(src, tc.orientation).(*image.RGBA)
		if got.Bounds().Size() != tc.size {
			t.Fatalf("orientation %d: size %v, want %v", tc.orientation, got.Bounds().Size(), tc.size)
		}
		for x, want := range tc.row0 {
			if v := got.Pix[got.PixOffset(x, 0)]; v != want {
				t.Errorf("orientation %d: top row pixel %d holds %d, want %d", tc.orientation, x, v, want)
			}
		}
	}
}

// heifImageInfo maps irot and imir to EXIF orientations as libavif does.
func TestHEIFInfo_EXIFOrientation(t *testing.T) {
	for _, tc := range []struct{ rotation, mirror, want int }{
		{0, 0, 1}, {1, 0, 8}, {2, 0, 3}, {3, 0, 6},
		{0, 1, 4}, {0, 2, 2}, {1, 1, 5}, {1, 2, 7}, {2, 1, 2}, {2, 2, 4}, {3, 1, 7}, {3, 2, 5},
	} {
		if got := (heifImageInfo{rotation: tc.rotation, mirror: tc.mirror}).exifOrientation(); got != tc.want {
			t.Errorf("irot %d, imir %d: orientation %d, want %d", tc.rotation, tc.mirror, got, tc.want)
		}
	}
}
