package pngstream

import (
	"bytes"
	"image"
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
		var img image.Image
		if derr == nil {
			img = d.Image()
		}
		if diff := stripsAgree(data, img, ok, derr); diff != "" {
			t.Fatalf("ReadRows and Decode disagree: %s", diff)
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
