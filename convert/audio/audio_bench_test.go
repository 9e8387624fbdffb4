package audio

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
)

// benchWAV returns seconds of 44.1 kHz 16-bit stereo: two tones and a little noise.
func benchWAV(b *testing.B, seconds int) []byte {
	n := 44100 * seconds
	samples := make([]int32, 2*n)
	seed := uint32(1)
	for i := range n {
		seed = seed*1664525 + 1013904223
		noise := float64(int32(seed>>16)&0xff) - 128
		samples[2*i] = int32(8000*math.Sin(float64(i)*2*math.Pi*440/44100) + noise)
		samples[2*i+1] = int32(6000*math.Sin(float64(i)*2*math.Pi*660/44100) + noise)
	}
	s := &sliceSource{inf: pcmInfo{rate: 44100, channels: 2, bits: 16, frames: int64(n)}, samples: samples}
	var buf bytes.Buffer
	if err := writeWAV(context.Background(), &buf, s, s.inf.frames, convert.Params{}); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

func BenchmarkAudio(b *testing.B) {
	wav := benchWAV(b, 60)
	b.Run("wav-flac-60s", func(b *testing.B) { convtest.BenchConverter(b, audioRun(audioCodecByID("wav"), "flac"), wav) })
	var fl bytes.Buffer
	if err := audioRun(audioCodecByID("wav"), "flac")(context.Background(), io.NewSectionReader(bytes.NewReader(wav), 0, int64(len(wav))), &fl, convert.Params{}); err != nil {
		b.Fatal(err)
	}
	b.Run("flac-wav-60s", func(b *testing.B) { convtest.BenchConverter(b, audioRun(audioCodecByID("flac"), "wav"), fl.Bytes()) })
	if _, err := exec.LookPath("lame"); err != nil {
		b.Log("lame not installed: no mp3 benchmark")
		return
	}
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "in.wav"), wav, 0o644)
	if out, err := exec.Command("lame", "--quiet", "-b", "192", filepath.Join(dir, "in.wav"), filepath.Join(dir, "out.mp3")).CombinedOutput(); err != nil {
		b.Fatalf("lame: %v %s", err, out)
	}
	mp3, _ := os.ReadFile(filepath.Join(dir, "out.mp3"))
	b.Run("mp3-wav-60s", func(b *testing.B) { convtest.BenchConverter(b, audioRun(audioCodecByID("mp3"), "wav"), mp3) })
}
