package audio

import (
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
)

// TestAudio_Warnings: tags and float samples the output cannot keep are reported, exactly; the
// untagged samples report nothing. The tagged samples are made by ffmpeg
// (testdata/audio/make-tagged-samples.sh).
func TestAudio_Warnings(t *testing.T) {
	w := convtest.Warning
	cases := []convtest.WarningCase{
		{Sample: "sample-float-tagged.wav", From: "wav", To: "flac", Want: []convert.Warning{
			w(convert.WarnBitDepthReduced, "the WAV has floating-point samples; they were written as 24-bit integers, and values beyond full scale were clipped"),
			w(convert.WarnMetadataDropped, "the WAV's tags (LIST INFO) were not written to the FLAC")}},
		{Sample: "sample-tagged.flac", From: "flac", To: "wav", Want: []convert.Warning{
			w(convert.WarnMetadataDropped, "the FLAC's tags (Vorbis comments) were not written to the WAV")}},
		{Sample: "sample-tagged.mp3", From: "mp3", To: "flac", Want: []convert.Warning{
			w(convert.WarnMetadataDropped, "the MP3's ID3 tags were not written to the FLAC")}},
		{Sample: "sample-tagged.ogg", From: "ogg", To: "wav", Want: []convert.Warning{
			w(convert.WarnMetadataDropped, "the Ogg Vorbis's tags (Vorbis comments) were not written to the WAV")}},
		{Sample: "sample.wav", From: "wav", To: "flac"},
		{Sample: "sample-24bit.wav", From: "wav", To: "flac"},
		{Sample: "sample.flac", From: "flac", To: "wav"},
	}
	convtest.CheckWarnings(t, testCatalog(), filepath.Join(convtest.Testdata, "audio"), cases)
}
