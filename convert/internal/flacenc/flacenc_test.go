package flacenc

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mewkiz/flac"
)

// encode encodes interleaved samples and returns the FLAC stream.
func encode(t testing.TB, inf Info, samples []int32, workers int) []byte {
	t.Helper()
	var buf bytes.Buffer
	e, err := NewEncoder(&buf, inf, workers)
	if err != nil {
		t.Fatal(err)
	}
	n := len(samples) / inf.Channels
	chans := make([][]int32, inf.Channels)
	for off := 0; off < n; off += inf.BlockSize {
		m := min(inf.BlockSize, n-off)
		for c := range chans {
			chans[c] = chans[c][:0]
			for i := range m {
				chans[c] = append(chans[c], samples[(off+i)*inf.Channels+c])
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

// decodeMewkiz decodes a FLAC stream with github.com/mewkiz/flac into interleaved samples.
func decodeMewkiz(t testing.TB, data []byte) (rate, channels, bps int, out []int32) {
	t.Helper()
	s, err := flac.New(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	rate, channels, bps = int(s.Info.SampleRate), int(s.Info.NChannels), int(s.Info.BitsPerSample)
	for {
		f, err := s.ParseNext()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("mewkiz/flac: %v", err)
		}
		for i := range f.Subframes[0].Samples {
			for _, sf := range f.Subframes {
				out = append(out, sf.Samples[i])
			}
		}
	}
	return rate, channels, bps, out
}

// decodeFlacTool decodes with Debian's flac (which checks every CRC) into interleaved samples.
func decodeFlacTool(t testing.TB, data []byte, channels, bps int) []int32 {
	t.Helper()
	if _, err := exec.LookPath("flac"); err != nil {
		t.Log("flac not installed: the reference decoder is not run")
		return nil
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.flac")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if bps != 8 && bps != 16 && bps != 24 {
		// flac writes raw output of these depths only: test the stream's integrity instead.
		if msg, err := exec.Command("flac", "-t", "-s", in).CombinedOutput(); err != nil {
			t.Fatalf("flac -t: %v\n%s", err, msg)
		}
		return nil
	}
	out := filepath.Join(dir, "out.raw")
	cmd := exec.Command("flac", "-d", "-s", "--force-raw-format", "--endian=little", "--sign=signed", "-o", out, in)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("flac -d: %v\n%s", err, msg)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	width := (bps + 7) / 8
	var got []int32
	for i := 0; i+width <= len(raw); i += width {
		var v uint32
		for j := range width {
			v |= uint32(raw[i+j]) << (8 * j)
		}
		shift := 32 - 8*width
		got = append(got, int32(v<<shift)>>shift)
	}
	return got
}

// signal makes n frames of tones and noise at the given depth.
func signal(n, channels, bps int, seed uint32) []int32 {
	out := make([]int32, n*channels)
	hi := float64(int64(1)<<(bps-1) - 1)
	for i := range n {
		for c := range channels {
			seed = seed*1664525 + 1013904223
			noise := float64(int32(seed>>8)%64) / 64 * hi / 100
			v := 0.6*hi*math.Sin(float64(i)*float64(c+1)*2*math.Pi*440/44100) + noise
			out[i*channels+c] = int32(math.Max(-hi-1, math.Min(hi, math.Round(v))))
		}
	}
	return out
}

func checkRoundTrip(t *testing.T, inf Info, samples []int32, workers int) []byte {
	t.Helper()
	data := encode(t, inf, samples, workers)
	rate, ch, bps, got := decodeMewkiz(t, data)
	if rate != inf.Rate || ch != inf.Channels || bps != inf.Bits {
		t.Fatalf("STREAMINFO says %d Hz %d ch %d bits, want %d %d %d", rate, ch, bps, inf.Rate, inf.Channels, inf.Bits)
	}
	if !slices.Equal(got, samples) {
		for i := range min(len(got), len(samples)) {
			if got[i] != samples[i] {
				t.Logf("bits %d: first difference at %d: %d, want %d", inf.Bits, i, got[i], samples[i])
				break
			}
		}
		t.Fatalf("mewkiz/flac decodes %d samples that differ from the %d encoded", len(got), len(samples))
	}
	if ref := decodeFlacTool(t, data, inf.Channels, inf.Bits); ref != nil && !slices.Equal(ref, samples) {
		t.Fatalf("flac -d decodes %d samples that differ from the %d encoded", len(ref), len(samples))
	}
	return data
}

func TestEncoder_RoundTrip(t *testing.T) {
	for _, tt := range []struct {
		name              string
		rate, ch, bps, bs int
		n                 int
	}{
		{"16bit-stereo", 44100, 2, 16, 4096, 44100*2 + 17},
		{"24bit-stereo", 96000, 2, 24, 4096, 20000},
		{"8bit-mono", 8000, 1, 8, 4096, 9000},
		{"12bit-3ch", 24000, 3, 12, 1152, 5000},
		{"20bit-6ch", 48000, 6, 20, 4096, 8193},
		{"odd-rate", 12345, 2, 16, 4096, 4097},
		{"tiny", 44100, 2, 16, 4096, 3},
		{"many-frames", 44100, 1, 16, 16, 16*200 + 5}, // frame numbers past one UTF-8 byte
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := signal(tt.n, tt.ch, tt.bps, 7)
			inf := Info{Rate: tt.rate, Channels: tt.ch, Bits: tt.bps, Samples: int64(tt.n), BlockSize: tt.bs, FrameRate: true}
			one := checkRoundTrip(t, inf, s, 1)
			// Parallel encoding writes the same bytes.
			if many := encode(t, inf, s, 3); !bytes.Equal(one, many) {
				t.Fatal("3 workers wrote other bytes than 1")
			}
		})
	}
}

func TestEncoder_Extremes(t *testing.T) {
	for _, bps := range []int{8, 16, 24} {
		lo, hi := -int32(1)<<(bps-1), int32(1)<<(bps-1)-1
		var s []int32
		// Full-scale alternation (the largest residuals and side values), silence, constants
		// and a ramp.
		for i := range 5000 {
			if i%2 == 0 {
				s = append(s, hi, lo)
			} else {
				s = append(s, lo, hi)
			}
		}
		for range 5000 {
			s = append(s, 0, 0)
		}
		for range 4096 {
			s = append(s, hi, lo)
		}
		for i := range 5000 {
			s = append(s, int32(i%int(hi))-hi/2, -int32(i%int(hi)))
		}
		inf := Info{Rate: 44100, Channels: 2, Bits: bps, BlockSize: 4096}
		checkRoundTrip(t, inf, s, 2)
	}
}

func TestEncoder_Header(t *testing.T) {
	data := encode(t, Info{Rate: 44100, Channels: 2, Bits: 16, Samples: 5000, BlockSize: 4096}, signal(5000, 2, 16, 1), 1)
	if string(data[:4]) != "fLaC" || data[4] != 0x80 || data[7] != 34 {
		t.Fatalf("stream header % x", data[:8])
	}
	if got := binary.BigEndian.Uint64(data[8+10:]) & (1<<36 - 1); got != 5000 {
		t.Fatalf("total samples %d, want 5000", got)
	}
	for _, inf := range []Info{
		{Rate: 44100, Channels: 0, Bits: 16, BlockSize: 4096},
		{Rate: 44100, Channels: 9, Bits: 16, BlockSize: 4096},
		{Rate: 44100, Channels: 2, Bits: 32, BlockSize: 4096},
		{Rate: 44100, Channels: 2, Bits: 5, BlockSize: 4096},
		{Rate: 44100, Channels: 2, Bits: 16, BlockSize: 8},
		{Rate: 0, Channels: 2, Bits: 16, BlockSize: 4096},
	} {
		if _, err := NewEncoder(io.Discard, inf, 1); err == nil {
			t.Errorf("NewEncoder(%+v) accepted it", inf)
		}
	}
}

// FuzzEncoder encodes arbitrary bytes as samples and requires mewkiz/flac to decode them
// back exactly.
func FuzzEncoder(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 255, 128, 127, 0}, uint8(16), uint8(2))
	f.Add(bytes.Repeat([]byte{0x7f, 0xff, 0x80, 0x00}, 3000), uint8(16), uint8(2))
	f.Add(bytes.Repeat([]byte{1, 2, 3}, 5000), uint8(24), uint8(1))
	f.Add([]byte("some text as 8-bit audio, some text as 8-bit audio"), uint8(8), uint8(3))
	f.Fuzz(func(t *testing.T, raw []byte, bpsSel, chSel uint8) {
		bps := []int{8, 12, 16, 20, 24}[int(bpsSel)%5]
		ch := 1 + int(chSel)%8
		width := (bps + 7) / 8
		n := len(raw) / width / ch
		if n == 0 {
			return
		}
		s := make([]int32, n*ch)
		for i := range s {
			var v uint32
			for j := range width {
				v |= uint32(raw[i*width+j]) << (8 * j)
			}
			s[i] = int32(v<<(32-bps)) >> (32 - bps)
		}
		inf := Info{Rate: 44100, Channels: ch, Bits: bps, Samples: int64(n), BlockSize: 256}
		data := encode(t, inf, s, 2)
		if _, _, _, got := decodeMewkiz(t, data); !slices.Equal(got, s) {
			t.Fatal("decoded samples differ")
		}
	})
}

// BenchmarkEncoder encodes 60 s of 44.1 kHz 16-bit stereo (tones and noise) with one worker
// and with GOMAXPROCS workers.
func BenchmarkEncoder(b *testing.B) {
	const n = 44100 * 60
	s := signal(n, 2, 16, 3)
	inf := Info{Rate: 44100, Channels: 2, Bits: 16, Samples: n, BlockSize: 4096, FrameRate: true}
	chans := [][]int32{make([]int32, 0, 4096), make([]int32, 0, 4096)}
	for _, workers := range []int{1, 0} {
		name := "workers=1"
		if workers == 0 {
			name = "workers=GOMAXPROCS"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(n * 2 * 2)
			var size int
			for b.Loop() {
				var out countWriter
				e, err := NewEncoder(&out, inf, workers)
				if err != nil {
					b.Fatal(err)
				}
				for off := 0; off < n; off += 4096 {
					m := min(4096, n-off)
					chans[0], chans[1] = chans[0][:0], chans[1][:0]
					for i := range m {
						chans[0] = append(chans[0], s[2*(off+i)])
						chans[1] = append(chans[1], s[2*(off+i)+1])
					}
					if err := e.Write(chans); err != nil {
						b.Fatal(err)
					}
				}
				if err := e.Close(); err != nil {
					b.Fatal(err)
				}
				size = int(out)
			}
			b.ReportMetric(float64(size), "out-bytes")
		})
	}
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }
