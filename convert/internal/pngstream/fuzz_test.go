package pngstream

import (
	"bytes"
	"image/png"
	"io"
	"testing"
)

// decodeWith decodes data with pngstream using the given inflater and returns the error.
func decodeWith(data []byte, z func(io.Reader) (io.ReadCloser, error)) error {
	defer func(old func(io.Reader) (io.ReadCloser, error)) { newZlib = old }(newZlib)
	newZlib = z
	d, _, err := NewDecoder(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return d.Decode(nil)
}

// fuzzMaxPixels keeps the fuzzer's images small, as the caller's DecodeConfig limit does.
const fuzzMaxPixels = 1 << 20

// FuzzDecode is differential: for any input neither decoder may panic, and when pngstream
// takes the file it must agree with image/png: both succeed with identical images, or both
// fail with the same message (see below for the inflater's share). Seeds: testdata/fuzz/FuzzDecode plus small files built here.
//
//	go test ./convert/internal/pngstream -run XXX -fuzz FuzzDecode -fuzztime 3m
func FuzzDecode(f *testing.F) {
	for _, img := range testImages(5, 4, 1) {
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := png.DecodeConfig(bytes.NewReader(data))
		if err == nil && cfg.Width*cfg.Height > fuzzMaxPixels {
			return
		}
		d, ok, err := NewDecoder(bytes.NewReader(data))
		if !ok && err == nil {
			return
		}
		var derr error = err
		if err == nil {
			derr = d.Decode(nil)
		}
		want, werr := png.Decode(bytes.NewReader(data))
		switch {
		case derr == nil && werr == nil:
			if diff := sameImage(d.Image(), want); diff != "" {
				t.Fatalf("images differ: %s", diff)
			}
		case derr == nil:
			t.Fatalf("pngstream succeeded, image/png failed: %v", werr)
		case werr == nil:
			t.Fatalf("pngstream failed (%v), image/png succeeded", derr)
		case derr.Error() != werr.Error():
			// On corrupt or cut deflate data the two inflaters stop at different points
			// (klauspost/compress hands over less of the output decoded before the error),
			// so the message may differ; with compress/zlib it must not.
			if serr := decodeWith(data, stdNewZlib); serr == nil || serr.Error() != werr.Error() {
				t.Fatalf("pngstream says %q (%v with compress/zlib), image/png %q", derr, serr, werr)
			}
		}
	})
}

// FuzzRingDecode: a ring decoder of 3 rows, whose reader copies rows out as they become final,
// hands over image/png's rows and fails exactly when NewDecoder's decode does.
//
//	go test ./convert/internal/pngstream -run XXX -fuzz FuzzRingDecode -fuzztime 1m
func FuzzRingDecode(f *testing.F) {
	for _, img := range testImages(5, 9, 2) {
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := png.DecodeConfig(bytes.NewReader(data))
		if err == nil && cfg.Width*cfg.Height > fuzzMaxPixels {
			return
		}
		whole, ok, err := NewDecoder(bytes.NewReader(data))
		if !ok || err != nil {
			return
		}
		werr := whole.Decode(nil)
		const ring = 3
		// The reader copies synchronously inside progress, so every row is out before wait.
		var d *Decoder
		var rows []byte
		done := 0
		d, ok, err = NewRingDecoder(bytes.NewReader(data), ring, func(y int) error {
			if done < y-ring+1 {
				t.Fatalf("asked to overwrite row %d before rows below %d were handed over", y-ring, done)
			}
			return nil
		})
		if !ok || err != nil {
			t.Fatalf("NewRingDecoder: %v, %v; NewDecoder took the file", ok, err)
		}
		pix, stride, _ := pixOf(d.Image())
		derr := d.Decode(func(n int) {
			for y := done; y < n; y++ {
				slot := y
				if d.Ring() > 0 {
					slot = y % d.Ring()
				}
				rows = append(rows, pix[slot*stride:(slot+1)*stride]...)
			}
			done = n
		})
		if (derr == nil) != (werr == nil) || (derr != nil && derr.Error() != werr.Error()) {
			t.Fatalf("ring decode: %v; whole decode: %v", derr, werr)
		}
		if derr == nil {
			wpix, _, _ := pixOf(whole.Image())
			if !bytes.Equal(rows, wpix) {
				t.Fatalf("ring rows differ from the whole image")
			}
		}
	})
}
