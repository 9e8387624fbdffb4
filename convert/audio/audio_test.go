package audio

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/internal/cputime"
)

// testCatalog is a catalog of the audio family alone.
var testCatalog = sync.OnceValue(func() *convert.Catalog {
	c := convert.NewEmptyCatalog(convert.Limits{})
	Register(c)
	return c
})

// TestAudio_Matrix converts every sample to every audio format it reaches and reads each back
// (the audio part of the standard catalog's conversion matrix).
func TestAudio_Matrix(t *testing.T) {
	checkers := map[string]convtest.Checker{"wav": checkAudioOutput("wav"), "flac": checkAudioOutput("flac")}
	owns := func(_, to string) bool { return checkers[to] != nil }
	convtest.Matrix(t, testCatalog(), owns, checkers)
}

func audioCodecByID(id string) *audioCodec {
	for i := range audioDecoders {
		if audioDecoders[i].id == id {
			return &audioDecoders[i]
		}
	}
	return nil
}

// decodeAudio reads a whole file of an audio format as interleaved samples.
func decodeAudio(t testing.TB, id string, data []byte) (pcmInfo, []int32) {
	t.Helper()
	s, err := openAudio(context.Background(), audioCodecByID(id), io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))))
	if err != nil {
		t.Fatalf("decoding %s: %v", id, err)
	}
	var samples []int32
	for {
		block, err := s.read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("decoding %s: %v", id, err)
		}
		for k := range block[0] {
			for _, ch := range block {
				samples = append(samples, ch[k])
			}
		}
	}
	return s.info(), samples
}

// checkAudioOutput decodes the output and compares rate, channels and length with the
// source's, and every sample when the source is lossless.
func checkAudioOutput(to string) func(t *testing.T, source, output string) {
	return func(t *testing.T, source, output string) {
		t.Helper()
		from := convtest.FormatOfSample(testCatalog(), source)
		out, err := os.ReadFile(output)
		if err != nil {
			t.Fatal(err)
		}
		if id, name := convert.Sniff(out); id != to {
			t.Fatalf("output sniffs as %s", name)
		}
		gotInf, got := decodeAudio(t, to, out)
		if audioCodecByID(from) == nil {
			return
		}
		src, err := os.ReadFile(source)
		if err != nil {
			t.Fatal(err)
		}
		wantInf, want := decodeAudio(t, from, src)
		if gotInf.rate != wantInf.rate || gotInf.channels != wantInf.channels || gotInf.bits != wantInf.bits {
			t.Fatalf("output %d Hz, %d channels, %d bits; source %d Hz, %d channels, %d bits",
				gotInf.rate, gotInf.channels, gotInf.bits, wantInf.rate, wantInf.channels, wantInf.bits)
		}
		if len(got) != len(want) {
			t.Fatalf("output has %d samples, source %d", len(got), len(want))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("samples differ from the source's")
		}
		if to == "flac" {
			flacTest(t, output)
		}
	}
}

// flacTest runs the reference decoder's integrity check when it is installed.
func flacTest(t *testing.T, path string) {
	t.Helper()
	if _, err := exec.LookPath("flac"); err != nil {
		return
	}
	if out, err := exec.Command("flac", "-t", "-s", path).CombinedOutput(); err != nil {
		t.Fatalf("flac -t: %v\n%s", err, out)
	}
}

func readAudioSample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "audio", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAudio_WAVFLACRoundTripIsExact(t *testing.T) {
	for _, name := range []string{"sample.wav", "sample-24bit.wav"} {
		t.Run(name, func(t *testing.T) {
			wav := readAudioSample(t, name)
			fl, err := convtest.RunCatalog(t, testCatalog(), "wav", "flac", wav)
			if err != nil {
				t.Fatal(err)
			}
			back, err := convtest.RunCatalog(t, testCatalog(), "flac", "wav", fl)
			if err != nil {
				t.Fatal(err)
			}
			inf0, s0 := decodeAudio(t, "wav", wav)
			inf1, s1 := decodeAudio(t, "wav", back)
			if inf0 != inf1 || !slices.Equal(s0, s1) {
				t.Fatalf("round trip changed the audio: %+v -> %+v", inf0, inf1)
			}
			// The data chunk is byte for byte the original's.
			if i, j := bytes.Index(wav, []byte("data")), bytes.Index(back, []byte("data")); !bytes.Equal(wav[i:], back[j:]) {
				t.Fatal("data chunk differs")
			}
		})
	}
}

// pcmWAV builds a WAV file from interleaved samples with the given format tag and depth.
func pcmWAV(t *testing.T, rate, channels, bits int, samples []int32) []byte {
	t.Helper()
	s := &sliceSource{inf: pcmInfo{rate: rate, channels: channels, bits: bits, frames: int64(len(samples) / channels)}, samples: samples}
	var buf bytes.Buffer
	if err := writeWAV(context.Background(), &buf, s, s.inf.frames, convert.Params{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sliceSource serves interleaved samples in blocks of 1000.
type sliceSource struct {
	inf     pcmInfo
	samples []int32
	pos     int
	chans   [][]int32
}

func (s *sliceSource) info() pcmInfo { return s.inf }

func (s *sliceSource) read() ([][]int32, error) {
	if s.pos >= len(s.samples) {
		return nil, io.EOF
	}
	n := min(1000, (len(s.samples)-s.pos)/s.inf.channels)
	s.chans = make([][]int32, s.inf.channels)
	for k := range n {
		for c := range s.chans {
			s.chans[c] = append(s.chans[c], s.samples[s.pos+k*s.inf.channels+c])
		}
	}
	s.pos += n * s.inf.channels
	return s.chans, nil
}

func TestAudio_Depths(t *testing.T) {
	noise := func(n, bits int) []int32 {
		lo, hi := sampleRange(bits)
		out := make([]int32, n)
		x := uint32(12345)
		for i := range out {
			x = x*1664525 + 1013904223
			out[i] = int32(int64(lo) + int64(x)%(int64(hi)-int64(lo)+1))
		}
		out[0], out[1] = lo, hi
		return out
	}
	for _, tt := range []struct{ channels, bits int }{{1, 8}, {2, 8}, {2, 16}, {3, 16}, {2, 24}, {6, 24}, {1, 12}, {2, 20}} {
		samples := noise(tt.channels*5000+tt.channels, tt.bits)
		wav := pcmWAV(t, 8000, tt.channels, tt.bits, samples)
		fl, err := convtest.RunCatalog(t, testCatalog(), "wav", "flac", wav)
		if err != nil {
			t.Fatalf("%+v: %v", tt, err)
		}
		inf, got := decodeAudio(t, "flac", fl)
		if inf.bits != tt.bits || inf.channels != tt.channels || !slices.Equal(got, samples) {
			t.Fatalf("%+v: FLAC holds %+v, samples equal %v", tt, inf, slices.Equal(got, samples))
		}
		back, err := convtest.RunCatalog(t, testCatalog(), "flac", "wav", fl)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back, wav) {
			t.Fatalf("%+v: WAV -> FLAC -> WAV is not byte-identical", tt)
		}
	}
}

func TestAudio_FloatAnd32Bit(t *testing.T) {
	// A 32-bit float WAV becomes 24-bit FLAC; a 32-bit integer one is refused by FLAC.
	le := binary.LittleEndian
	var data bytes.Buffer
	for _, f := range []float32{0, 0.5, -0.5, 1, -1, 2, float32(math.NaN())} {
		binary.Write(&data, le, f)
	}
	h := make([]byte, 44)
	copy(h, "RIFF")
	le.PutUint32(h[4:], uint32(36+data.Len()))
	copy(h[8:], "WAVEfmt ")
	le.PutUint32(h[16:], 16)
	le.PutUint16(h[20:], 3)
	le.PutUint16(h[22:], 1)
	le.PutUint32(h[24:], 8000)
	le.PutUint32(h[28:], 32000)
	le.PutUint16(h[32:], 4)
	le.PutUint16(h[34:], 32)
	copy(h[36:], "data")
	le.PutUint32(h[40:], uint32(data.Len()))
	fl, err := convtest.RunCatalog(t, testCatalog(), "wav", "flac", append(h, data.Bytes()...))
	if err != nil {
		t.Fatal(err)
	}
	inf, got := decodeAudio(t, "flac", fl)
	if want := []int32{0, 1 << 22, -1 << 22, 1<<23 - 1, -1 << 23, 1<<23 - 1, 0}; inf.bits != 24 || !slices.Equal(got, want) {
		t.Fatalf("got %d bits %v, want 24 bits %v", inf.bits, got, want)
	}
	w32 := pcmWAV(t, 8000, 1, 32, []int32{1, -1, math.MaxInt32})
	_, err = convtest.RunCatalog(t, testCatalog(), "wav", "flac", w32)
	convtest.WantUserError(t, err, "the input has 32-bit samples, but FLAC output supports 8, 12, 16, 20 or 24 bits")
}

func TestAudio_UnknownLengthFLACToWAV(t *testing.T) {
	samples := make([]int32, 2*9000)
	for i := range samples {
		samples[i] = int32(i % 3000)
	}
	var fl bytes.Buffer
	s := &sliceSource{inf: pcmInfo{rate: 16000, channels: 2, bits: 16, frames: -1}, samples: samples}
	if err := writeFLAC(context.Background(), &fl, s, convert.Params{}); err != nil {
		t.Fatal(err)
	}
	wav, err := convtest.RunCatalog(t, testCatalog(), "flac", "wav", fl.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if _, got := decodeAudio(t, "wav", wav); !slices.Equal(got, samples) {
		t.Fatal("samples differ")
	}
}

func TestAudio_StreamingWAVHeader(t *testing.T) {
	// Recorders that stream write 0xFFFFFFFF as the data size: the file's end is the audio's.
	wav := pcmWAV(t, 8000, 1, 16, []int32{1, 2, 3, 4})
	binary.LittleEndian.PutUint32(wav[40:], 0xFFFFFFFF)
	fl, err := convtest.RunCatalog(t, testCatalog(), "wav", "flac", wav)
	if err != nil {
		t.Fatal(err)
	}
	if _, got := decodeAudio(t, "flac", fl); !slices.Equal(got, []int32{1, 2, 3, 4}) {
		t.Fatalf("got %v", got)
	}
}

func TestAudio_LossyLengths(t *testing.T) {
	// MP3 and Vorbis decode to the lengths their decoders report; the checkers compare samples.
	for _, tt := range []struct {
		file, from string
		frames     int64
	}{{"sample.ogg", "ogg", 22050}} {
		inf, samples := decodeAudio(t, tt.from, readAudioSample(t, tt.file))
		if inf.frames != tt.frames || int64(len(samples)) != tt.frames*int64(inf.channels) {
			t.Errorf("%s: header %d frames, decoded %d samples; want %d frames", tt.file, inf.frames, len(samples), tt.frames)
		}
	}
	inf, samples := decodeAudio(t, "mp3", readAudioSample(t, "sample.mp3"))
	// lame resamples a 96 kbit/s encode to 32 kHz, and go-mp3 keeps its delay and padding.
	if inf.rate != 32000 || inf.channels != 2 || int64(len(samples)) != 2*inf.frames || inf.frames < 16000 {
		t.Errorf("mp3: %+v, %d samples", inf, len(samples))
	}
}

func TestAudio_Hostile(t *testing.T) {
	flacData := readAudioSample(t, "sample.flac")
	wavData := readAudioSample(t, "sample.wav")
	tests := []struct {
		name, from, to string
		data           []byte
		want           string
	}{
		{"audio-huge-header.wav", "wav", "flac", nil, "input is not a valid WAV file (its header claims 3.7 GiB of audio, but the file holds 100 bytes)"},
		{"audio-truncated.flac", "flac", "wav", nil, "input is not a valid FLAC file (it is truncated)"},
		{"wav as flac", "flac", "wav", wavData, "input is not a valid FLAC file (it looks like WAV)"},
		{"flac as mp3", "mp3", "wav", flacData, "input is not a valid MP3 file (it looks like FLAC)"},
		{"flac as ogg", "ogg", "wav", flacData, "input is not a valid Ogg Vorbis file (it looks like FLAC)"},
		{"text as wav", "wav", "flac", []byte("hello"), "input is not a valid WAV file (it looks like text)"},
		{"adpcm", "wav", "flac", func() []byte {
			b := slices.Clone(wavData)
			b[20] = 2
			return b
		}(), "input is a WAV file with compression (format tag 2)"},
		{"too many channels", "wav", "flac", func() []byte {
			b := slices.Clone(wavData)
			binary.LittleEndian.PutUint16(b[22:], 100)
			return b
		}(), "input has 100 audio channels; at most 8 are supported"},
		{"no data", "wav", "flac", wavData[:44-8], "input is not a valid WAV file (it has no data chunk)"},
		{"flac claiming 2^36 samples", "flac", "wav", func() []byte {
			b := slices.Clone(flacData)
			b[21] |= 0x0f // STREAMINFO total samples: all 36 bits set
			b[22], b[23], b[24], b[25] = 0xff, 0xff, 0xff, 0xff
			return b
		}(), "input is 432h51m5s of 2-channel audio at 44100 Hz, over the limit of 2147483648 samples"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.data
			if data == nil {
				var err error
				if data, err = os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", tt.name)); err != nil {
					t.Fatal(err)
				}
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := cputime.Self() // CPU, not wall time: the machine may be busy (issue 24)
			_, err := convtest.RunCatalog(t, testCatalog(), tt.from, tt.to, data)
			elapsed := cputime.Self() - start
			runtime.ReadMemStats(&after)
			convtest.WantUserError(t, err, tt.want)
			if elapsed > 3*time.Second {
				t.Errorf("took %v of CPU", elapsed)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
				t.Errorf("allocated %d KB", alloc>>10)
			}
		})
	}
}

func TestAudio_Cancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct{ file, from, to string }{{"sample.wav", "wav", "flac"}, {"sample.flac", "flac", "wav"}, {"sample.mp3", "mp3", "wav"}, {"sample.ogg", "ogg", "flac"}} {
		data := readAudioSample(t, tt.file)
		err := audioRun(audioCodecByID(tt.from), tt.to)(ctx, io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), io.Discard, convert.Params{})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s -> %s: %v", tt.from, tt.to, err)
		}
	}
}

// TestGenerateAudioHostile rewrites the audio hostile samples (CONVSVC_GEN_SAMPLES=1).
func TestGenerateAudioHostile(t *testing.T) {
	if os.Getenv("CONVSVC_GEN_SAMPLES") == "" {
		t.Skip("set CONVSVC_GEN_SAMPLES=1 to regenerate the audio hostile samples")
	}
	dir := filepath.Join("..", "..", "testdata", "hostile")
	// A WAV header claiming 4 GB of audio in front of 100 bytes.
	wav := pcmWAV(t, 44100, 2, 16, make([]int32, 50))
	binary.LittleEndian.PutUint32(wav[4:], 4_000_000_036)
	binary.LittleEndian.PutUint32(wav[40:], 4_000_000_000)
	if err := os.WriteFile(filepath.Join(dir, "audio-huge-header.wav"), wav, 0o644); err != nil {
		t.Fatal(err)
	}
	fl := readAudioSample(t, "sample.flac")
	if err := os.WriteFile(filepath.Join(dir, "audio-truncated.flac"), fl[:len(fl)*6/10], 0o644); err != nil {
		t.Fatal(err)
	}
}

// sampleRange returns the smallest and largest value of a bits-bit signed sample.
func sampleRange(bits int) (lo, hi int32) {
	return -1 << (bits - 1), 1<<(bits-1) - 1
}

// samplesOnly hides a source's readRaw16, so writeWAV takes the int32 path.
type samplesOnly struct{ pcmSource }

// TestAudio_MP3ToWAVRawIsTheSamePath checks that MP3 -> WAV through the decoder's 16-bit bytes
// (rawPCM16) writes the same file, byte for byte, as through the int32 blocks.
func TestAudio_MP3ToWAVRawIsTheSamePath(t *testing.T) {
	data := readAudioSample(t, "sample.mp3")
	wav := func(hide bool) []byte {
		s, err := openAudio(context.Background(), audioCodecByID("mp3"), io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(rawPCM16); !ok {
			t.Fatal("the MP3 source does not hand over its 16-bit bytes")
		}
		if hide {
			s = samplesOnly{s}
		}
		var buf bytes.Buffer
		if err := writeWAV(context.Background(), &buf, s, s.info().frames, convert.Params{}); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	raw, viaInt32 := wav(false), wav(true)
	if len(raw) < 60000 || !bytes.Equal(raw, viaInt32) {
		t.Fatalf("raw path wrote %d bytes, the int32 path %d, not the same", len(raw), len(viaInt32))
	}
}

// TestAudio_CountsSamples: WAV -> FLAC and FLAC -> WAV report the samples done of the
// stated length as their progress (Catalog.Convert's progress sink): several growing values
// ending at 1.
func TestAudio_CountsSamples(t *testing.T) {
	for _, c := range []struct{ file, from, to string }{{"sample.wav", "wav", "flac"}, {"sample.flac", "flac", "wav"}} {
		in, err := os.Open(filepath.Join("..", "..", "testdata", "audio", c.file))
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		var got []float64
		var mu sync.Mutex
		ctx := convert.WithProgress(context.Background(), func(v float64) {
			mu.Lock()
			got = append(got, v)
			mu.Unlock()
		})
		if _, err := testCatalog().Convert(ctx, c.from, c.to, convert.Options{}, in, io.Discard, t.TempDir()); err != nil {
			t.Fatal(err)
		}
		if len(got) < 4 || got[0] != 0 || got[len(got)-1] != 1 || !slices.IsSorted(got) {
			t.Fatalf("%s -> %s progress %v: want 0, growing values, then 1", c.from, c.to, got)
		}
	}
}
