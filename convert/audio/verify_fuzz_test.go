package audio

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/convtest"
)

// FuzzOutputFrames feeds the audio output checks' readers (WAV chunks, FLAC frames) any
// bytes: each counts or fails, never panics.
func FuzzOutputFrames(f *testing.F) {
	convtest.AddFuzzSamples(f, "audio", "sample*")
	f.Fuzz(func(t *testing.T, b []byte) {
		r := io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b)))
		wavFrames(context.Background(), r)
		flacFrames(context.Background(), r)
	})
}
