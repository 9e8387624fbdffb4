package flacenc

import (
	"bytes"
	"io"
	"testing"

	"github.com/mewkiz/flac"
	"github.com/mewkiz/flac/frame"
)

// TestEncoder_LPC checks that tones with noise are coded with LPC subframes (the predictors
// flac -5 uses) and that both decoders get the samples back exactly, at every depth whose
// side channel needs the 64-bit prediction sum.
func TestEncoder_LPC(t *testing.T) {
	for _, bps := range []int{8, 16, 24} {
		inf := Info{Rate: 44100, Channels: 2, Bits: bps, BlockSize: 4096, FrameRate: true}
		s := signal(3*4096+100, 2, bps, 3)
		data := checkRoundTrip(t, inf, s, 1)
		st, err := flac.New(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		lpc, subframes := 0, 0
		for {
			f, err := st.ParseNext()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, sf := range f.Subframes {
				subframes++
				if sf.Pred == frame.PredFIR {
					lpc++
					if sf.Order < 1 || sf.Order > maxLPCOrder {
						t.Fatalf("%d-bit: LPC order %d", bps, sf.Order)
					}
				}
			}
		}
		if lpc == 0 {
			t.Fatalf("%d-bit: none of %d subframes is LPC", bps, subframes)
		}
	}
}

// TestTukeyWindow checks the window's shape: zero at both ends, one in the middle half.
func TestTukeyWindow(t *testing.T) {
	w := make([]float64, 4096)
	tukeyWindow(w)
	if w[0] != 0 || w[4095] != 0 {
		t.Fatalf("ends %v %v, want 0", w[0], w[4095])
	}
	for i := 1024; i < 3072; i++ {
		if w[i] != 1 {
			t.Fatalf("w[%d] = %v, want 1", i, w[i])
		}
	}
}
