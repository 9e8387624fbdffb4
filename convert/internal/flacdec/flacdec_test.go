package flacdec

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mewkiz/flac"

	"github.com/convsvc/convsvc/convert/internal/flacenc"
)

// decodeAll decodes data with this package into interleaved samples.
func decodeAll(data []byte) (Info, []int32, error) {
	d, err := NewDecoder(bytes.NewReader(data))
	if err != nil {
		return Info{}, nil, err
	}
	var out []int32
	for {
		chans, err := d.Next()
		if err == io.EOF {
			return d.Info(), out, nil
		}
		if err != nil {
			return d.Info(), out, err
		}
		for i := range chans[0] {
			for _, c := range chans {
				out = append(out, c[i])
			}
		}
	}
}

// decodeMewkiz decodes data with github.com/mewkiz/flac into interleaved samples.
func decodeMewkiz(data []byte) ([]int32, error) {
	s, err := flac.New(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	var out []int32
	for {
		f, err := s.ParseNext()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		for i := range f.Subframes[0].Samples {
			for _, sf := range f.Subframes {
				out = append(out, sf.Samples[i])
			}
		}
	}
}

func readSample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "audio", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tone makes n frames of interleaved test audio.
func tone(n, ch, bps int) []int32 {
	out := make([]int32, n*ch)
	seed := uint32(5)
	lim := int32(1)<<(bps-1) - 1
	var v int32
	for i := range out {
		seed = seed*1664525 + 1013904223
		v += int32(seed>>20)%int32(1+lim/64) - lim/128
		v = max(min(v, lim), -lim)
		out[i] = v
	}
	return out
}

func flacencStream(t *testing.T, s []int32, ch, bps, bs int) []byte {
	t.Helper()
	var buf bytes.Buffer
	n := len(s) / ch
	e, err := flacenc.NewEncoder(&buf, flacenc.Info{Rate: 44100, Channels: ch, Bits: bps, Samples: int64(n), BlockSize: bs}, 1)
	if err != nil {
		t.Fatal(err)
	}
	chans := make([][]int32, ch)
	for off := 0; off < n; off += bs {
		for c := range chans {
			chans[c] = chans[c][:0]
			for i := off; i < min(off+bs, n); i++ {
				chans[c] = append(chans[c], s[i*ch+c])
			}
		}
		if err := e.Write(chans); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// flacToolStreams are Debian's flac -0, -5 and -8 encodings of testdata's sample.wav (LPC
// streams from the reference encoder), by name; none when flac is not installed, which fails
// under CI=true (.ci/run installs it).
func flacToolStreams(t *testing.T) map[string][]byte {
	t.Helper()
	if _, err := exec.LookPath("flac"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("flac is not installed (CI=true): .ci/run installs it")
		}
		t.Log("flac not installed: no LPC streams from the reference encoder")
		return nil
	}
	streams := map[string][]byte{}
	dir := t.TempDir()
	for _, lvl := range []string{"-0", "-5", "-8"} {
		out := filepath.Join(dir, "o"+lvl+".flac")
		cmd := exec.Command("flac", lvl, "-s", "-f", "-o", out, filepath.Join("..", "..", "..", "testdata", "audio", "sample.wav"))
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("flac %s: %v %s", lvl, err, msg)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		streams["flac"+lvl] = b
	}
	return streams
}

// TestDecoder_MatchesMewkiz decodes the repository's FLAC sample, flacenc's streams and (when
// Debian's flac is installed) flac -8's LPC streams, and requires the samples mewkiz/flac
// decodes (and the encoded ones).
func TestDecoder_MatchesMewkiz(t *testing.T) {
	type stream struct {
		name string
		data []byte
		want []int32
	}
	streams := []stream{{name: "sample.flac", data: readSample(t, "sample.flac")}}
	for _, c := range []struct{ ch, bps, bs, n int }{{2, 16, 4096, 30000}, {1, 8, 1152, 5000}, {6, 24, 4096, 9000}, {2, 20, 256, 3000}, {3, 12, 4096, 100}} {
		s := tone(c.n, c.ch, c.bps)
		streams = append(streams, stream{name: "flacenc", data: flacencStream(t, s, c.ch, c.bps, c.bs), want: s})
	}
	for name, data := range flacToolStreams(t) {
		streams = append(streams, stream{name: name, data: data})
	}
	for _, s := range streams {
		_, got, err := decodeAll(s.data)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		ref, err := decodeMewkiz(s.data)
		if err != nil {
			t.Fatalf("%s: mewkiz: %v", s.name, err)
		}
		if !slices.Equal(got, ref) || len(got) == 0 {
			t.Fatalf("%s: %d samples differ from mewkiz/flac's %d", s.name, len(got), len(ref))
		}
		if s.want != nil && !slices.Equal(got, s.want) {
			t.Fatalf("%s: samples differ from the encoded ones", s.name)
		}
	}
}

// TestDecoder_Truncated cuts the sample at many lengths: each cut is an error wrapping
// io.ErrUnexpectedEOF (or a clean end exactly at a frame boundary), never a panic.
func TestDecoder_Truncated(t *testing.T) {
	data := readSample(t, "sample.flac")
	_, full, err := decodeAll(data)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(data); n += 1 + n/200 { // every length in the header, then sparser
		_, got, err := decodeAll(data[:n])
		if err == nil {
			if len(got) >= len(full) {
				t.Fatalf("cut at %d: all samples decoded", n)
			}
			continue
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) && n > 42 {
			t.Fatalf("cut at %d: %v, want io.ErrUnexpectedEOF", n, err)
		}
	}
	// A flipped bit in the audio fails a CRC.
	bad := slices.Clone(data)
	bad[len(bad)/2] ^= 0x10
	if _, _, err := decodeAll(bad); err == nil {
		t.Fatal("a corrupted frame decoded without error")
	}
}

// FuzzDecoder requires that arbitrary input never panics and that whatever this decoder
// accepts in full, mewkiz/flac decodes to the same samples.
func FuzzDecoder(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "audio", "sample.flac"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/3])
	f.Add([]byte("fLaC"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, got, err := decodeAll(b)
		if err != nil {
			return
		}
		ref, merr := decodeMewkiz(b)
		if merr == nil && !slices.Equal(got, ref) {
			t.Fatalf("decoded %d samples, mewkiz/flac %d, and they differ", len(got), len(ref))
		}
	})
}

// BenchmarkDecoder decodes 60 s of 44.1 kHz 16-bit stereo written by flacenc.
func BenchmarkDecoder(b *testing.B) {
	t := &testing.T{}
	s := tone(44100*60, 2, 16)
	data := flacencStream(t, s, 2, 16, 4096)
	b.ReportAllocs()
	b.SetBytes(int64(len(s) * 2))
	for b.Loop() {
		d, err := NewDecoder(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := d.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}
