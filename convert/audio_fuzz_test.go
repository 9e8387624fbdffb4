package convert

import (
	"bytes"
	"context"
	"slices"
	"testing"
)

// FuzzWAV feeds arbitrary bytes to the WAV reader; what it accepts must convert to FLAC and
// back to the same samples.
func FuzzWAV(f *testing.F) {
	addFuzzSamples(f, "audio", "sample*.wav")
	addFuzzSamples(f, "hostile", "audio-huge-header.wav")
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		var fl bytes.Buffer
		err := audioRun(audioCodecByID("wav"), "flac")(ctx, bytesSection(data), &fl, Params{})
		requireUserError(t, err)
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
