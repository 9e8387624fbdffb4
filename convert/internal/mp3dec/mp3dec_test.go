package mp3dec

import (
	"bytes"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	gomp3 "github.com/hajimehoshi/go-mp3"
)

// decodeBoth decodes data with this package and with the module it was copied from.
func decodeBoth(t testing.TB, data []byte) (ours, ref []byte, oursErr, refErr error) {
	t.Helper()
	if d, err := NewDecoder(bytes.NewReader(data)); err != nil {
		oursErr = err
	} else {
		ours, oursErr = io.ReadAll(d)
	}
	if d, err := gomp3.NewDecoder(bytes.NewReader(data)); err != nil {
		refErr = err
	} else {
		ref, refErr = io.ReadAll(d)
	}
	return
}

func mp3Samples(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "audio", "sample.mp3"))
	if err != nil {
		t.Fatal(err)
	}
	out["sample.mp3"] = b
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Log("ffmpeg not installed: only the repository's MP3 is compared")
		return out
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"-f", "lavfi", "-i", "sine=f=440:d=3", "-ac", "1", "-b:a", "64k"},
		{"-f", "lavfi", "-i", "anoisesrc=d=3:c=pink:a=0.3", "-ac", "2", "-b:a", "320k"},
		{"-f", "lavfi", "-i", "sine=f=1000:d=3:sample_rate=22050", "-ac", "2", "-b:a", "48k"},
	} {
		name := filepath.Join(dir, "t.mp3")
		cmd := exec.Command("ffmpeg", append(append([]string{"-v", "error", "-y"}, args...), name)...)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ffmpeg %v: %v %s", args, err, msg)
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		out[args[3]] = b
	}
	return out
}

// pcmDiff compares two 16-bit little-endian PCM streams of the same length: the largest
// sample difference and the PSNR in dB against full scale (+Inf when identical).
func pcmDiff(a, b []byte) (maxDiff int, psnr float64) {
	var se float64
	for i := 0; i+1 < len(a); i += 2 {
		x := int(int16(uint16(a[i]) | uint16(a[i+1])<<8))
		y := int(int16(uint16(b[i]) | uint16(b[i+1])<<8))
		d := x - y
		if d < 0 {
			d = -d
		}
		maxDiff = max(maxDiff, d)
		se += float64(d * d)
	}
	if se == 0 {
		return maxDiff, math.Inf(1)
	}
	mse := se / float64(len(a)/2)
	return maxDiff, 10 * math.Log10(32767*32767/mse)
}

// clipped reports whether any sample of 16-bit PCM is at full scale, where the order of float
// operations decides between saturating or not.
func clipped(p []byte) bool {
	for i := 0; i+1 < len(p); i += 2 {
		x := int16(uint16(p[i]) | uint16(p[i+1])<<8)
		if x >= 32767 || x <= -32767 {
			return true
		}
	}
	return false
}

// The fast synthesis and IMDCT sum in another order (and float32 where go-mp3 used a matrix), so
// the PCM is not go-mp3's byte for byte any more: it must stay within a few LSB of it.
const (
	maxSampleDiff = 4    // LSB of 16-bit PCM
	minPSNR       = 90.0 // dB against full scale
)

// TestDecoder_MatchesModule requires the PCM of every sample to have go-mp3's length and to be
// within maxSampleDiff of it, with a PSNR of at least minPSNR.
func TestDecoder_MatchesModule(t *testing.T) {
	for name, data := range mp3Samples(t) {
		ours, ref, oerr, rerr := decodeBoth(t, data)
		if oerr != nil || rerr != nil {
			t.Fatalf("%s: errors %v / %v", name, oerr, rerr)
		}
		if len(ours) == 0 || len(ours) != len(ref) {
			t.Fatalf("%s: %d bytes of PCM, go-mp3 %d", name, len(ours), len(ref))
		}
		md, psnr := pcmDiff(ours, ref)
		t.Logf("%s: max sample difference %d, PSNR %.1f dB", name, md, psnr)
		if md > maxSampleDiff || psnr < minPSNR {
			t.Fatalf("%s: max sample difference %d (limit %d), PSNR %.1f dB (limit %.0f)", name, md, maxSampleDiff, psnr, minPSNR)
		}
	}
}

// FuzzDecoder requires the same failure and the same PCM length as go-mp3 on arbitrary input,
// and PCM within the tolerance above unless go-mp3's output clips (garbage gains make huge
// intermediate values there, where summation order decides the sample).
func FuzzDecoder(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "audio", "sample.mp3"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add([]byte("ID3"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ours, ref, oerr, rerr := decodeBoth(t, b)
		if (oerr == nil) != (rerr == nil) || len(ours) != len(ref) {
			t.Fatalf("ours %d bytes (%v), go-mp3 %d bytes (%v)", len(ours), oerr, len(ref), rerr)
		}
		if clipped(ref) || clipped(ours) {
			return
		}
		if md, psnr := pcmDiff(ours, ref); md > maxSampleDiff || psnr < minPSNR {
			t.Fatalf("max sample difference %d, PSNR %.1f dB", md, psnr)
		}
	})
}

// BenchmarkDecoder decodes the repository's MP3 sample.
func BenchmarkDecoder(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "audio", "sample.mp3"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		d, err := NewDecoder(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecoder60s decodes the MP3 named by MP3DEC_BENCH (bench/audio.sh's 60 s input).
func BenchmarkDecoder60s(b *testing.B) {
	name := os.Getenv("MP3DEC_BENCH")
	if name == "" {
		b.Skip("MP3DEC_BENCH not set")
	}
	data, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := NewDecoder(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, d); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecoder_LengthAndSeek requires go-mp3's Length, and after a Seek the same PCM (within the
// tolerance) as go-mp3 after the same Seek: the buffered source must keep positions exact.
func TestDecoder_LengthAndSeek(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "audio", "sample.mp3"))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := NewDecoder(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := gomp3.NewDecoder(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if ours.Length() != ref.Length() || ours.Length() <= 0 {
		t.Fatalf("Length %d, go-mp3 %d", ours.Length(), ref.Length())
	}
	for _, off := range []int64{ours.Length() / 2 &^ 3, 4 * 1152 * 3, 0} {
		if _, err := ours.Seek(off, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		if _, err := ref.Seek(off, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		a, b := make([]byte, 8192), make([]byte, 8192)
		if _, err := io.ReadFull(ours, a); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(ref, b); err != nil {
			t.Fatal(err)
		}
		if md, psnr := pcmDiff(a, b); md > maxSampleDiff || psnr < minPSNR {
			t.Fatalf("after Seek(%d): max sample difference %d, PSNR %.1f dB", off, md, psnr)
		}
	}
}
