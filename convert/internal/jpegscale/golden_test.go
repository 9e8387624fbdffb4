package jpegscale

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"io"
	"math/rand/v2"
	"sort"
	"testing"
)

// scaledDigest is the SHA-256 of every scale's pixels and errors over the corpus
// TestDecodeScaled_SameAsBefore builds, as decoded by revision 6843b7e (before the fast AC
// table, idctQuarter and the 1/8 scale's skipped AC stores). A change to the decoder that
// moves a single pixel or error at any scale changes it.
const scaledDigest = "766b5986da3f410cd57dae98dfeb845239b6fe5b6d6be92a3695c502e301ba5f"

// TestDecodeScaled_SameAsBefore decodes image/jpeg's samples, a photo, and 40 damaged
// variants of each (bytes overwritten, garbage or markers inserted, cut short) at 1, 1/2, 1/4
// and 1/8 scale and checks the digest of all the pixels and errors against scaledDigest.
func TestDecodeScaled_SameAsBefore(t *testing.T) {
	if testing.Short() && raceEnabled {
		// The decoder has no goroutines or shared state, and one digest over every input
		// cannot be sampled: about 110 s of the race step at a load of 20 for nothing the
		// detector could find. The plain step checks the digest.
		t.Skip("-race -short: a single-goroutine decode of the whole corpus; the plain run checks it")
	}
	rng := rand.New(rand.NewPCG(31, 77))
	inputs := samples(t)
	inputs["photo"] = photoJPEG(t, 300, 200, 85)
	names := make([]string, 0, len(inputs))
	for name := range inputs {
		names = append(names, name)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, name := range names {
		data := inputs[name]
		sos := bytes.LastIndex(data, []byte{0xff, 0xda})
		variants := [][]byte{data}
		for i := 0; sos >= 0 && i < 40; i++ {
			b := damage(rng, data, sos, i)
			variants = append(variants, b)
		}
		for vi, b := range variants {
			for _, s := range []int{1, 2, 4, 8} {
				m, err := DecodeScaled(bytes.NewReader(b), s)
				fmt.Fprintf(h, "%s %d %d: %v\n", name, vi, s, err)
				if err == nil {
					writePixels(h, m)
				}
			}
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != scaledDigest {
		t.Errorf("digest of every scale's pixels and errors %s, want %s", got, scaledDigest)
	}
}

// writePixels writes m's bounds and samples, plane by plane, to w.
func writePixels(w io.Writer, m image.Image) {
	fmt.Fprintf(w, "%T %v\n", m, m.Bounds())
	r := m.Bounds()
	switch m := m.(type) {
	case *image.Gray:
		for y := r.Min.Y; y < r.Max.Y; y++ {
			i := m.PixOffset(r.Min.X, y)
			w.Write(m.Pix[i : i+r.Dx()])
		}
	case *image.YCbCr:
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				w.Write([]byte{m.Y[m.YOffset(x, y)], m.Cb[m.COffset(x, y)], m.Cr[m.COffset(x, y)]})
			}
		}
	default: // CMYK, RGBA
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				c := m.At(x, y)
				rr, g, b, a := c.RGBA()
				fmt.Fprintf(w, "%x %x %x %x %v,", rr, g, b, a, c)
			}
		}
	}
}
