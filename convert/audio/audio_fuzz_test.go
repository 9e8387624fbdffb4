package audio

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
)

// FuzzWAV feeds arbitrary bytes to the WAV reader; what it accepts must convert to FLAC and
// back to the same samples.
func FuzzWAV(f *testing.F) {
	convtest.AddFuzzSamples(f, "audio", "sample*.wav")
	convtest.AddFuzzSamples(f, "hostile", "audio-huge-header.wav")
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		var fl bytes.Buffer
		err := audioRun(audioCodecByID("wav"), "flac")(ctx, convtest.BytesSection(data), &fl, convert.Params{})
		convtest.RequireUserError(t, err)
		if err != nil {
			return
		}
		_, want := decodeAudio(t, "wav", data)
		_, got := decodeAudio(t, "flac", fl.Bytes())
		if !slices.Equal(got, want) {
			t.Fatalf("WAV -> FLAC changed the samples (%d -> %d)", len(want), len(got))
		}
	})
}
