package image

import (
	"bytes"
	"context"
	"errors"
	"image"
	"io"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// FuzzDecodeImage feeds arbitrary bytes through the image input path of every raster decoder
// (sniff, header, pixel limit, frame count, decode) and, for small results, through every
// encoder: nothing may panic, every failure must be an *Error, and no decoded image or
// animation may exceed the pixel limit.
func FuzzDecodeImage(f *testing.F) {
	lim := convert.Limits{MaxPixels: 1 << 20}
	// Compile the wasm decoders before fuzzing: the AVIF module takes seconds, many more
	// under the fuzzer's coverage instrumentation, and an input that long counts as a hung
	// worker.
	warmWASM()
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
		formats := []string{"png"}
		if id, _ := convert.Sniff(data); id != "" && id != "png" && CodecByID(id) != nil {
			formats = append(formats, id)
		}
		for _, format := range formats {
			img, err := decodeImageAs(ctx, in, format, lim)
			if err != nil {
				var ce *convert.Error
				if !errors.As(err, &ce) {
					t.Fatalf("decoding as %s: %v is %T, not *Error", format, err, err)
				}
				continue
			}
			b := img.Bounds()
			px := int64(b.Dx()) * int64(b.Dy())
			if px > lim.MaxPixels || px <= 0 {
				t.Fatalf("decoded %v, limit %d pixels", b, lim.MaxPixels)
			}
			codec := CodecByID(format)
			if codec.decodeAll != nil {
				fuzzFrames(t, in, codec, lim)
			}
			if px > 4096 {
				continue // encoding large images makes the fuzzer crawl
			}
			for i := range Codecs {
				enc := &Codecs[i]
				if enc.Encode == nil || enc.MaxSide > 0 && (b.Dx() > enc.MaxSide || b.Dy() > enc.MaxSide) {
					continue
				}
				if err := fuzzEncode(ctx, enc, img); err != nil {
					t.Fatalf("encoding a decoded %s image as %s: %v", format, enc.ID, err)
				}
			}
		}
	})
}

// fuzzFrames decodes every frame of an animation the way gif/webp-to-gif/webp converters do.
func fuzzFrames(t *testing.T, in *io.SectionReader, codec *Codec, lim convert.Limits) {
	ctx := context.Background()
	cfg, err := ReadHeader(ctx, in, codec, lim)
	if err != nil {
		t.Fatalf("header read again: %v", err)
	}
	n, err := countImageFrames(in, codec, cfg, lim)
	if err != nil {
		var ce *convert.Error
		if !errors.As(err, &ce) {
			t.Fatalf("counting frames: %v is %T, not *Error", err, err)
		}
		return
	}
	if n < 2 {
		return
	}
	a, err := decodeImageFrames(ctx, in, codec, cfg, n)
	if err != nil {
		var ce *convert.Error
		if !errors.As(err, &ce) {
			t.Fatalf("decoding frames: %v is %T, not *Error", err, err)
		}
		return
	}
	if int64(len(a.frames))*int64(cfg.Width)*int64(cfg.Height) > lim.MaxPixels {
		t.Fatalf("decoded %d frames of %dx%d, limit %d pixels", len(a.frames), cfg.Width, cfg.Height, lim.MaxPixels)
	}
	if px := cfg.Width * cfg.Height * len(a.frames); px <= 4096 {
		for _, id := range []string{"gif", "webp"} {
			if err := CodecByID(id).encodeAll(ctx, io.Discard, a, fuzzLossless); err != nil {
				t.Fatalf("encoding %d decoded %s frames as %s: %v", len(a.frames), codec.ID, id, err)
			}
		}
	}
}

var fuzzLossless = convert.Options{Lossless: new(true)}

// fuzzEncode encodes a decoded image as the converters would, except that the encoders
// translated from C (libwebp's lossy mode by wasm2go, libaom in wasm) only get their input
// prepared: they are not what untrusted bytes reach, and under the fuzzer's instrumentation
// one call takes seconds, which stalls fuzzing.
func fuzzEncode(ctx context.Context, enc *Codec, img image.Image) error {
	switch enc.ID {
	case "webp":
		packedNRGBA(img)
		return enc.Encode(ctx, io.Discard, img, fuzzLossless)
	case "avif":
		packedRGBA(img)
		return nil
	}
	return enc.Encode(ctx, io.Discard, img, convert.Options{})
}

// FuzzReadImageMeta feeds arbitrary bytes to the metadata reader of every format that carries
// EXIF, XMP or ICC: nothing may panic, no block may exceed maxMetaBlock, the orientation is
// 1 to 8, and a profile found parses or fails cleanly.
func FuzzReadImageMeta(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		in := io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data)))
		for _, id := range []string{"jpeg", "png", "webp", "tiff"} {
			m := readImageMeta(in, CodecByID(id))
			if m.orientation < 1 || m.orientation > 8 {
				t.Fatalf("%s: orientation %d", id, m.orientation)
			}
			if len(m.exif) > maxMetaBlock || len(m.icc) > maxMetaBlock || len(m.xmp) > maxMetaBlock {
				t.Fatalf("%s: blocks of %d, %d, %d bytes", id, len(m.exif), len(m.icc), len(m.xmp))
			}
			newFinisher(CodecByID(id), CodecByID("jpeg"), convert.Params{}, geometry{}, m).profileHandled()
		}
	})
}
