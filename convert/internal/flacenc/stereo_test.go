package flacenc

import (
	"bytes"
	"io"
	"testing"

	"github.com/mewkiz/flac"
	"github.com/mewkiz/flac/frame"
)

// parseFrames returns every frame of a FLAC stream, parsed by mewkiz/flac.
func parseFrames(t *testing.T, data []byte) []*frame.Frame {
	t.Helper()
	st, err := flac.New(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var frames []*frame.Frame
	for {
		f, err := st.ParseNext()
		if err == io.EOF {
			return frames
		}
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
	}
}

// TestEncoder_WastedBits checks that samples whose low bits are all zero are coded with
// FLAC's wasted bits (as flac does: a 24-bit square wave at ±2^22 had been 62% larger than
// flac -5's file), and that both decoders get them back exactly, in every channel
// assignment.
func TestEncoder_WastedBits(t *testing.T) {
	for _, tt := range []struct {
		name   string
		bps    int
		shift  uint
		stereo bool
	}{
		{"24bit-square", 24, 22, false},
		{"16bit-low-4-zero-stereo", 16, 4, true},
		{"24bit-8-from-16-stereo", 24, 8, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ch := 1
			if tt.stereo {
				ch = 2
			}
			n := 3*4096 + 50
			s := signal(n, ch, tt.bps-int(tt.shift), 5)
			if tt.shift == 22 { // a square wave of ±2^22 (and one zero a block)
				for i := range s {
					s[i] = 1
					if i%400 >= 200 {
						s[i] = -1
					}
					if i%4096 == 7 {
						s[i] = 0
					}
				}
			}
			for i := range s {
				s[i] <<= tt.shift
			}
			inf := Info{Rate: 44100, Channels: ch, Bits: tt.bps, BlockSize: 4096, FrameRate: true}
			data := checkRoundTrip(t, inf, s, 1)
			wasted := 0
			for _, f := range parseFrames(t, data) {
				for _, sf := range f.Subframes {
					if sf.Wasted > 0 {
						wasted++
					}
				}
			}
			if wasted == 0 {
				t.Fatalf("no subframe has wasted bits")
			}
			if tt.shift == 22 && len(data) > n*3/8 {
				t.Fatalf("%d bytes for %d samples of a square wave", len(data), n)
			}
		})
	}
}

// TestEncoder_StereoChoice checks that every channel assignment is chosen where it is the
// smallest, as flac -5's exhaustive mid/side does: left and side when the right channel is
// noise riding on the left, side and right the other way round, mid and side for the same
// tone in both with opposite noise, independent for unrelated signals.
func TestEncoder_StereoChoice(t *testing.T) {
	n := 2 * 4096
	tone := signal(n, 1, 14, 1)
	noise := make([]int32, n)
	seed := uint32(9)
	for i := range noise {
		seed = seed*1664525 + 1013904223
		noise[i] = int32(seed>>20) - 2048
	}
	other := signal(n, 1, 12, 2)
	for _, tt := range []struct {
		name string
		l, r func(i int) int32
		want frame.Channels
	}{
		{"mid-side", func(i int) int32 { return tone[i] + noise[i]/16 }, func(i int) int32 { return tone[i] - noise[i]/16 }, frame.ChannelsMidSide},
		{"independent", func(i int) int32 { return tone[i] }, func(i int) int32 { return noise[i] }, frame.ChannelsLR},
		{"left-side", func(i int) int32 { return tone[i] }, func(i int) int32 { return tone[i] + noise[i]/64 + other[i] }, frame.ChannelsLeftSide},
		{"side-right", func(i int) int32 { return tone[i] + noise[i]/64 + other[i] }, func(i int) int32 { return tone[i] }, frame.ChannelsSideRight},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := make([]int32, 2*n)
			for i := range n {
				s[2*i], s[2*i+1] = tt.l(i), tt.r(i)
			}
			inf := Info{Rate: 44100, Channels: 2, Bits: 16, BlockSize: 4096, FrameRate: true}
			data := checkRoundTrip(t, inf, s, 1)
			for i, f := range parseFrames(t, data) {
				if f.Channels != tt.want {
					t.Fatalf("frame %d: channel assignment %v, want %v", i, f.Channels, tt.want)
				}
			}
		})
	}
}
