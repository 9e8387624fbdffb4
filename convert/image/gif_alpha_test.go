package image

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// gifAlphaWarning is what a PNG with partly transparent pixels reports on its way to GIF.
const gifAlphaWarning = "the PNG has partly transparent pixels; GIF has only fully transparent or opaque ones, so those less than half opaque were made transparent and the others composited over white"

// convertPNGToGIF writes m as a PNG, converts it to GIF and decodes the result.
func convertPNGToGIF(t *testing.T, m image.Image) (*image.Paletted, []convert.Warning) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.png")
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ws, err := testCatalog(convert.Limits{}).Convert(context.Background(), "png", "gif", convert.Options{}, openFile(t, path), &out, t.TempDir())
	if err != nil {
		t.Fatalf("png -> gif: %v", err)
	}
	g, err := gif.Decode(&out)
	if err != nil {
		t.Fatalf("decoding the GIF: %v", err)
	}
	pm, ok := g.(*image.Paletted)
	if !ok {
		t.Fatalf("decoded GIF is %T, want *image.Paletted", g)
	}
	return pm, ws
}

// TestGIF_PartialAlpha: GIF has one-bit transparency, so a pixel less than half opaque becomes
// the transparent index, a pixel at least half opaque is composited over white (as JPEG and
// Netpbm composite every pixel), an opaque pixel keeps its colour, and the job says so.
func TestGIF_PartialAlpha(t *testing.T) {
	m := image.NewNRGBA(image.Rect(0, 0, 4, 1))
	m.SetNRGBA(0, 0, color.NRGBA{R: 255, A: 0})         // transparent
	m.SetNRGBA(1, 0, color.NRGBA{B: 255, A: 128})       // half: composited
	m.SetNRGBA(2, 0, color.NRGBA{G: 255, A: 255})       // opaque
	m.SetNRGBA(3, 0, color.NRGBA{R: 40, G: 40, A: 127}) // just under half: transparent
	pm, ws := convertPNGToGIF(t, m)
	// Over white at 128/255: c*128/255 + 255*127/255, rounded.
	want := []color.NRGBA{{}, {R: 127, G: 127, B: 255, A: 255}, {G: 255, A: 255}, {}}
	for x, w := range want {
		got := color.NRGBAModel.Convert(pm.At(x, 0)).(color.NRGBA)
		if w.A == 0 {
			if got.A != 0 {
				t.Errorf("pixel %d: %v, want transparent", x, got)
			}
			continue
		}
		if got != w {
			t.Errorf("pixel %d: %v, want %v", x, got, w)
		}
	}
	if wantWs := []convert.Warning{warning(convert.WarnAlphaDropped, gifAlphaWarning)}; !reflect.DeepEqual(ws, wantWs) {
		t.Errorf("warnings\n%+v\nwant\n%+v", ws, wantWs)
	}
}

// TestGIF_PartialAlphaDithered: an image of more than 256 colours (median cut and dithering)
// composites its half-transparent pixels over white too: red at alpha 160 comes out pink-grey,
// not red.
func TestGIF_PartialAlphaDithered(t *testing.T) {
	m := image.NewNRGBA(image.Rect(0, 0, 64, 64))
	for y := range 64 {
		for x := range 64 {
			m.SetNRGBA(x, y, color.NRGBA{R: uint8(128 + x*2), G: uint8(y), B: uint8(x), A: 160})
		}
	}
	pm, ws := convertPNGToGIF(t, m)
	for y := range 64 {
		for x := range 64 {
			// Composited: g and b are at least 95*255/255 = 95 (white's share is 95/255 of 255).
			got := color.NRGBAModel.Convert(pm.At(x, y)).(color.NRGBA)
			if got.A != 255 || got.G < 70 || got.B < 70 {
				t.Fatalf("pixel %d,%d: %v, want opaque and composited over white (green and blue at least about 95)", x, y, got)
			}
		}
	}
	if len(ws) != 1 || ws[0].Code != convert.WarnAlphaDropped {
		t.Errorf("warnings %+v, want one alpha_dropped", ws)
	}
}

// TestGIF_OnOffAlphaKept: transparency that is only on or off fits GIF and reports nothing.
func TestGIF_OnOffAlphaKept(t *testing.T) {
	m := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	m.SetNRGBA(0, 0, color.NRGBA{R: 255, A: 255})
	pm, ws := convertPNGToGIF(t, m)
	if got := color.NRGBAModel.Convert(pm.At(1, 0)).(color.NRGBA); got.A != 0 {
		t.Errorf("transparent pixel came out %v", got)
	}
	if got := color.NRGBAModel.Convert(pm.At(0, 0)).(color.NRGBA); got != (color.NRGBA{R: 255, A: 255}) {
		t.Errorf("opaque pixel came out %v", got)
	}
	if len(ws) != 0 {
		t.Errorf("warnings %+v, want none", ws)
	}
}
