package wasmcodec

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"testing"
)

// needDirect skips a test of the direct path in a build without it (-tags aomsimd adds it).
func needDirect(t *testing.T) {
	if aomencWasm == nil {
		t.Skip("built without -tags aomsimd: no aomenc.wasm")
	}
}

// encodeBoth encodes m through the direct path and through libavif at the same settings.
func encodeBoth(t *testing.T, m *image.RGBA, opts AVIFOptions) (direct, libavif []byte) {
	t.Helper()
	var d, l bytes.Buffer
	if err := EncodeAVIF(context.Background(), &d, m, opts); err != nil {
		t.Fatalf("%+v: %v", opts, err)
	}
	aomDirectOff = true
	defer func() { aomDirectOff = false }()
	if err := EncodeAVIF(context.Background(), &l, m, opts); err != nil {
		t.Fatalf("%+v: libavif: %v", opts, err)
	}
	if bytes.Equal(d.Bytes(), l.Bytes()) {
		t.Fatalf("%+v: the direct path wrote libavif's bytes: it did not run", opts)
	}
	return d.Bytes(), l.Bytes()
}

// An opaque image coded by libaom directly (SIMD build, Go's YUV conversion and container)
// decodes, through libavif and dav1d, with the quality libavif's own encode of it has at the
// same settings, in about as many bytes, in every chroma layout.
func TestEncodeAVIF_DirectQualityAsLibavif(t *testing.T) {
	needDirect(t)
	for _, tc := range []struct {
		name string
		m    *image.RGBA
		opts AVIFOptions
	}{
		{"photo 4:2:0 q60", benchImage(320, 240), AVIFOptions{Quality: 60, Speed: 10, Chroma: AVIFYUV420}},
		{"photo 4:4:4 q90", benchImage(320, 240), AVIFOptions{Quality: 90, Speed: 8, Chroma: AVIFYUV444}},
		{"photo 4:2:2 q50", benchImage(320, 240), AVIFOptions{Quality: 50, Speed: 6, Chroma: AVIFYUV422}},
		{"sample 4:2:0 q60", sampleRGBA(t), AVIFOptions{Quality: 60, Speed: 10, Chroma: AVIFYUV420}},
	} {
		direct, libavif := encodeBoth(t, tc.m, tc.opts)
		a, err := DecodeAVIF(context.Background(), direct)
		if err != nil {
			t.Fatalf("%s: decoding the direct encode: %v", tc.name, err)
		}
		b, err := DecodeAVIF(context.Background(), libavif)
		if err != nil {
			t.Fatal(err)
		}
		pa, pb := psnrRGB(t, tc.m, a), psnrRGB(t, tc.m, b)
		t.Logf("%s: direct %d bytes %.3f dB; libavif %d bytes %.3f dB", tc.name, len(direct), pa, len(libavif), pb)
		if pa < pb-0.3 {
			t.Errorf("%s: direct %.3f dB, libavif %.3f dB", tc.name, pa, pb)
		}
		if len(direct) > len(libavif)*11/10 && pa < pb+0.5 { // more bytes only for more quality
			t.Errorf("%s: direct %d bytes, libavif %d", tc.name, len(direct), len(libavif))
		}
	}
}

// Flat colours of odd and tiny sizes come back as the same colours: the YUV conversion, its
// chroma subsampling at the edges and the colour signalling agree with the decoder's.
func TestEncodeAVIF_DirectColours(t *testing.T) {
	needDirect(t)
	colours := []color.RGBA{{255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}, {128, 128, 128, 255},
		{255, 255, 255, 255}, {0, 0, 0, 255}, {200, 150, 30, 255}}
	for _, size := range []image.Point{{1, 1}, {3, 5}, {17, 9}} {
		for _, chroma := range []int{AVIFYUV420, AVIFYUV422, AVIFYUV444} {
			for _, c := range colours {
				m := image.NewRGBA(image.Rectangle{Max: size})
				for i := 0; i < len(m.Pix); i += 4 {
					m.Pix[i], m.Pix[i+1], m.Pix[i+2], m.Pix[i+3] = c.R, c.G, c.B, c.A
				}
				var out bytes.Buffer
				if err := EncodeAVIF(context.Background(), &out, m, AVIFOptions{Quality: 90, Speed: 10, Chroma: chroma}); err != nil {
					t.Fatalf("%v %d %v: %v", size, chroma, c, err)
				}
				if !bytes.Contains(out.Bytes()[:64], []byte("MA1")) && chroma != AVIFYUV422 {
					t.Errorf("%v %d: no AVIF profile brand in %q", size, chroma, out.Bytes()[:32])
				}
				back, err := DecodeAVIF(context.Background(), out.Bytes())
				if err != nil {
					t.Fatalf("%v %d %v: decode: %v", size, chroma, c, err)
				}
				g := back.(*image.RGBA)
				if g.Rect != m.Rect {
					t.Fatalf("%v: decoded %v", size, g.Rect)
				}
				for i := 0; i < len(g.Pix); i += 4 {
					for k := range 3 {
						if d := int(g.Pix[i+k]) - int(m.Pix[i+k]); d < -4 || d > 4 {
							t.Fatalf("%v %d: %v came back as %v", size, chroma, c, g.Pix[i:i+4])
						}
					}
				}
			}
		}
	}
}

// Coded data without a still-picture sequence header is refused, not written as an AVIF.
func TestAV1Config_NoSequenceHeader(t *testing.T) {
	for _, obus := range [][]byte{
		nil,
		{0x12, 0x00},                   // a temporal delimiter alone
		{0x0a, 0x05, 0x00},             // a sequence header cut short
		{0x0a, 0x01, 0x00},             // one byte of sequence header
		{0x0a, 0x02, 0x00, 0x00},       // a full (not reduced) sequence header
		{0x08, 0x00},                   // no size field
		{0x12, 0xff, 0xff, 0xff, 0xff}, // a size running off the end
	} {
		if _, err := av1Config(obus, AVIFYUV420); !errors.Is(err, errAV1Header) {
			t.Errorf("av1Config(% x) = %v, want errAV1Header", obus, err)
		}
	}
	cfg, err := av1Config([]byte{0x12, 0x00, 0x0a, 0x02, 0x18, 0x40}, AVIFYUV420) // profile 0, still, reduced, level 1
	if err != nil || !bytes.Equal(cfg, []byte{0x81, 0x01, 0x0c, 0x00}) {
		t.Errorf("av1Config = % x, %v; want 81 01 0c 00", cfg, err)
	}
}
