package audio

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// TestAudio_Warnings: tags and float samples the output cannot keep are reported, exactly; the
// untagged samples report nothing. The tagged samples are made by ffmpeg
// (testdata/audio/make-tagged-samples.sh).
func TestAudio_Warnings(t *testing.T) {
	w := func(code, message string) convert.Warning { return convert.Warning{Code: code, Message: message} }
	tests := []struct {
		sample, from, to string
		want             []convert.Warning
	}{
		{"sample-float-tagged.wav", "wav", "flac", []convert.Warning{
			w(convert.WarnBitDepthReduced, "the WAV has floating-point samples; they were written as 24-bit integers, and values beyond full scale were clipped"),
			w(convert.WarnMetadataDropped, "the WAV's tags (LIST INFO) were not written to the FLAC")}},
		{"sample-tagged.flac", "flac", "wav", []convert.Warning{
			w(convert.WarnMetadataDropped, "the FLAC's tags (Vorbis comments) were not written to the WAV")}},
		{"sample-tagged.mp3", "mp3", "flac", []convert.Warning{
			w(convert.WarnMetadataDropped, "the MP3's ID3 tags were not written to the FLAC")}},
		{"sample-tagged.ogg", "ogg", "wav", []convert.Warning{
			w(convert.WarnMetadataDropped, "the Ogg Vorbis's tags (Vorbis comments) were not written to the WAV")}},
		{"sample.wav", "wav", "flac", nil},
		{"sample-24bit.wav", "wav", "flac", nil},
		{"sample.flac", "flac", "wav", nil},
	}
	for _, tt := range tests {
		f, err := os.Open(filepath.Join("..", "..", "testdata", "audio", tt.sample))
		if err != nil {
			t.Fatal(err)
		}
		ws, err := testCatalog().Convert(context.Background(), tt.from, tt.to, convert.Options{}, f, io.Discard, t.TempDir())
		f.Close()
		if err != nil {
			t.Fatalf("%s -> %s: %v", tt.sample, tt.to, err)
		}
		if !reflect.DeepEqual(ws, tt.want) {
			t.Errorf("%s -> %s: warnings\n%+v\nwant\n%+v", tt.sample, tt.to, ws, tt.want)
		}
	}
}
