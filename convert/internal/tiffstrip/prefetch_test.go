package tiffstrip

import (
	"bytes"
	"fmt"
	"image"
	"testing"
)

// decodeRows decodes d in strips of k rows into one image, as far as it gets: the image (rows
// past the failure left zero), the rows given, and the error that stopped it.
func decodeRows(d *Decoder, k int) ([]byte, int, error) {
	b := d.Bounds()
	rowLen := d.BytesPerPixel() * b.Dx()
	whole := make([]byte, rowLen*b.Dy())
	for y := 0; y < b.Dy(); y += k {
		r := image.Rect(0, y, b.Dx(), min(y+k, b.Dy()))
		if err := d.ReadRows(d.StripImage(whole[y*rowLen:], r)); err != nil {
			return whole, y, err
		}
	}
	return whole, b.Dy(), d.Finish()
}

// samePrefetched decodes data without and with Prefetch (2 and 3 workers), in strips of
// several heights: the same pixels, the same rows and the same error (message and value).
// It reports whether Prefetch was on.
func samePrefetched(t *testing.T, data []byte) (on bool) {
	t.Helper()
	for _, k := range []int{1, 3, 64} {
		d, ok, err := NewDecoder(bytes.NewReader(data), int64(len(data)))
		if !ok || err != nil || d.Bounds().Dx()*d.Bounds().Dy() > 1<<16 {
			return false
		}
		want, wantRows, wantErr := decodeRows(d, k)
		for _, workers := range []int{2, 3} {
			p, _, _ := NewDecoder(bytes.NewReader(data), int64(len(data)))
			if !p.Prefetch(workers) {
				return false
			}
			on = true
			got, rows, err := decodeRows(p, k)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || err != wantErr && fmt.Sprintf("%T", err) != fmt.Sprintf("%T", wantErr) {
				t.Fatalf("k=%d, %d workers: error %v (%T), without Prefetch %v (%T)", k, workers, err, err, wantErr, wantErr)
			}
			if rows != wantRows || !bytes.Equal(got, want) {
				t.Fatalf("k=%d, %d workers: rows or pixels differ from the decoder's without Prefetch", k, workers)
			}
		}
	}
	return on
}

// TestPrefetch_SameAsSequential: with Prefetch on, every compressed striped layout decodes to
// the same pixels as without it, and every prefix and corruption of multi-strip deflate and
// LZW files fails with the same error at the same row (or decodes the same).
func TestPrefetch_SameAsSequential(t *testing.T) {
	tried := 0
	for _, l := range allLayouts() {
		if l.compression == cNone || l.rowsPerStrip == 0 {
			if l.compression == cNone {
				data := buildTIFF(t, 37, 23, l, pixels(37, 23, l.samples))
				d, _, _ := NewDecoder(bytes.NewReader(data), int64(len(data)))
				if d.Prefetch(2) || d.PrefetchBytes(2) != 0 {
					t.Fatalf("%v: Prefetch on for an uncompressed file", l)
				}
			}
			continue
		}
		if samePrefetched(t, buildTIFF(t, 37, 23, l, pixels(37, 23, l.samples))) {
			tried++
		}
	}
	if tried == 0 {
		t.Fatal("Prefetch was never on")
	}
	for _, l := range []layout{{3, 2, 0, 8, 2, 7, false}, {1, 1, 0, 8, 0, 5, true}, {4, 2, 2, 5, 0, 7, false}} {
		full := buildTIFF(t, 20, 30, l, pixels(20, 30, l.samples))
		if !samePrefetched(t, full) {
			t.Fatalf("%v: Prefetch off", l)
		}
		if testing.Short() {
			continue // the fuzz seeds (FuzzDeflateTIFF, FuzzStripDecode) check broken files too
		}
		for n := 0; n < len(full); n += 9 {
			samePrefetched(t, full[:n])
		}
		for i := 0; i < len(full); i += 13 {
			c := bytes.Clone(full)
			c[i] ^= 0x5a
			samePrefetched(t, c)
		}
	}
}

// TestPrefetch_Off: one strip, a tiled file or one worker leave Prefetch off.
func TestPrefetch_Off(t *testing.T) {
	deflate := layout{3, 2, 0, 8, 2, 0, false}
	one := buildTIFF(t, 37, 23, deflate, pixels(37, 23, 3))
	tiled := buildTiledTIFF(t, 37, 23, layout{3, 2, 0, 8, 2, 0, false}, 16, 16, pixels(37, 23, 3))
	deflate.rowsPerStrip = 7
	many := buildTIFF(t, 37, 23, deflate, pixels(37, 23, 3))
	for name, tc := range map[string]struct {
		data    []byte
		workers int
	}{"one strip": {one, 2}, "tiled": {tiled, 2}, "one worker": {many, 1}} {
		d, ok, err := NewDecoder(bytes.NewReader(tc.data), int64(len(tc.data)))
		if !ok || err != nil {
			t.Fatalf("%s: ok %v, err %v", name, ok, err)
		}
		if d.PrefetchBytes(tc.workers) != 0 || d.Prefetch(tc.workers) {
			t.Errorf("%s: Prefetch on", name)
		}
	}
	d, _, _ := NewDecoder(bytes.NewReader(many), int64(len(many)))
	// 4 strips of 7 rows of 37 RGB pixels: 3 in flight with 2 workers.
	if got, want := d.PrefetchBytes(2), int64(3*(7*37*3+400<<10)); got != want {
		t.Errorf("PrefetchBytes(2) = %d, want %d", got, want)
	}
}
