package mp3dec

import (
	"bytes"
	"io"
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

// TestDecoder_MatchesModule requires the PCM of every sample to be byte for byte go-mp3's.
func TestDecoder_MatchesModule(t *testing.T) {
	for name, data := range mp3Samples(t) {
		ours, ref, oerr, rerr := decodeBoth(t, data)
		if oerr != nil || rerr != nil {
			t.Fatalf("%s: errors %v / %v", name, oerr, rerr)
		}
		if len(ours) == 0 || !bytes.Equal(ours, ref) {
			t.Fatalf("%s: %d bytes of PCM differ from go-mp3's %d", name, len(ours), len(ref))
		}
	}
}

// FuzzDecoder requires the same PCM and the same failure as go-mp3 on arbitrary input.
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
		if (oerr == nil) != (rerr == nil) || !bytes.Equal(ours, ref) {
			t.Fatalf("ours %d bytes (%v), go-mp3 %d bytes (%v)", len(ours), oerr, len(ref), rerr)
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
