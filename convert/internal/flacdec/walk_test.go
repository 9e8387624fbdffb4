package flacdec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/flaccrc"
)

// walk opens data and walks its frames.
func walk(data []byte) (int64, error) {
	d, err := NewDecoder(bytes.NewReader(data))
	if err != nil && !errors.Is(err, ErrUnsupported) {
		return 0, err
	}
	return d.Walk()
}

// metadataEnd is the offset of the first frame: after "fLaC" and every metadata block.
func metadataEnd(t *testing.T, data []byte) int {
	t.Helper()
	off := 4
	for {
		if off+4 > len(data) {
			t.Fatal("metadata runs past the data")
		}
		last, n := data[off]&0x80 != 0, int(data[off+1])<<16|int(data[off+2])<<8|int(data[off+3])
		off += 4 + n
		if last {
			return off
		}
	}
}

// frameStarts decodes data frame by frame and returns where each frame starts, then where the
// last one ends.
func frameStarts(t *testing.T, data []byte) []int {
	t.Helper()
	d, err := NewDecoder(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	off := metadataEnd(t, data)
	starts := []int{off}
	for off < len(data) {
		n, err := d.frame(data[off:])
		if err != nil {
			t.Fatalf("frame at %d: %v", off, err)
		}
		off += n
		starts = append(starts, off)
	}
	return starts
}

// sampleStreams are FLAC streams: the repository's sample, flacenc's streams of several
// shapes, and flac -0/-5/-8's LPC streams of sample.wav (Debian's flac; .ci/run installs it).
func sampleStreams(t *testing.T) map[string][]byte {
	t.Helper()
	streams := map[string][]byte{"sample.flac": readSample(t, "sample.flac")}
	for _, c := range []struct{ ch, bps, bs, n int }{{2, 16, 4096, 30000}, {1, 8, 1152, 5000}, {6, 24, 4096, 9000}, {2, 20, 256, 3000}, {3, 12, 4096, 100}, {1, 16, 16, 4097}} {
		name := fmt.Sprintf("flacenc %d ch, %d bits, blocks of %d, %d samples", c.ch, c.bps, c.bs, c.n)
		streams[name] = flacencStream(t, tone(c.n, c.ch, c.bps), c.ch, c.bps, c.bs)
	}
	for name, data := range flacToolStreams(t) {
		streams[name] = data
	}
	return streams
}

// TestWalk_CountsWhatDecodes walks every sample stream, and the same streams rewritten with
// variable block sizes (sample numbers), and wants the sample count decoding gives.
func TestWalk_CountsWhatDecodes(t *testing.T) {
	for name, data := range sampleStreams(t) {
		info, pcm, err := decodeAll(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := int64(len(pcm) / info.Channels)
		for _, s := range []struct {
			kind string
			data []byte
		}{{"fixed", data}, {"variable", variableBlocks(t, data)}} {
			got, err := walk(s.data)
			if err != nil || got != want {
				t.Fatalf("%s (%s block sizes): walked %d samples, %v; decoding gives %d", name, s.kind, got, err, want)
			}
		}
	}
}

// TestWalk_FailsDamage cuts, corrupts and drops frames of every sample stream: each walk
// fails or (a cut at a frame boundary, the last frame dropped) holds fewer samples than the
// whole, which STREAMINFO's count then refuses.
func TestWalk_FailsDamage(t *testing.T) {
	for name, data := range sampleStreams(t) {
		whole, err := walk(data)
		if err != nil {
			t.Fatal(err)
		}
		starts := frameStarts(t, data)
		for n := starts[0]; n < len(data); n += 1 + (len(data)-starts[0])/97 {
			if got, err := walk(data[:n]); err == nil && got >= whole {
				t.Fatalf("%s cut to %d of %d bytes: walked all %d samples", name, n, len(data), got)
			}
		}
		for _, i := range []int{0, len(starts) / 2, len(starts) - 2} {
			if i < 0 || i+1 >= len(starts) {
				continue
			}
			for _, at := range []int{starts[i], starts[i] + 3, (starts[i] + starts[i+1]) / 2, starts[i+1] - 1} {
				bad := slices.Clone(data)
				bad[at] ^= 0x21
				if got, err := walk(bad); err == nil {
					t.Fatalf("%s with byte %d of frame %d (%d-%d) changed: walked %d samples", name, at, i, starts[i], starts[i+1], got)
				}
			}
			if len(starts) > 2 {
				dropped := slices.Concat(data[:starts[i]], data[starts[i+1]:])
				if got, err := walk(dropped); err == nil && (i+2 < len(starts) || got >= whole) {
					t.Fatalf("%s without frame %d of %d: walked %d samples", name, i, len(starts)-1, got)
				}
			}
		}
	}
}

// variableBlocks rewrites a fixed-block-size stream as a variable one: each frame header's
// blocking strategy bit set and its frame number replaced by its first sample's number, the
// header's CRC-8 and the frame's CRC-16 computed again.
func variableBlocks(t *testing.T, data []byte) []byte {
	t.Helper()
	starts := frameStarts(t, data)
	out := slices.Clone(data[:starts[0]])
	var sample uint64
	for i := 0; i+1 < len(starts); i++ {
		f := data[starts[i]:starts[i+1]]
		lead := f[4]
		numLen := 1
		for b := byte(0x80); lead&b != 0 && b > 1; b >>= 1 {
			numLen++
		}
		if numLen > 1 {
			numLen-- // n leading ones: n bytes in all
		}
		bsCode, rateCode := f[2]>>4, f[2]&15
		extra := 0
		switch {
		case bsCode == 6:
			extra++
		case bsCode == 7:
			extra += 2
		}
		switch {
		case rateCode == 12:
			extra++
		case rateCode == 13 || rateCode == 14:
			extra += 2
		}
		d, err := NewDecoder(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		h, err := d.header(&bitReader{p: f}, f)
		if err != nil {
			t.Fatal(err)
		}
		hdr := append([]byte{f[0], f[1] | 1, f[2], f[3]}, utf8Number(sample)...)
		hdr = append(hdr, f[4+numLen:4+numLen+extra]...)
		hdr = append(hdr, flaccrc.CRC8(hdr))
		frame := append(hdr, f[4+numLen+extra+1:len(f)-2]...)
		frame = binary.BigEndian.AppendUint16(frame, flaccrc.CRC16(frame))
		out = append(out, frame...)
		sample += uint64(h.samples)
	}
	return out
}

// utf8Number is FLAC's UTF-8-like coding of a frame or sample number (up to 36 bits).
func utf8Number(v uint64) []byte {
	if v < 0x80 {
		return []byte{byte(v)}
	}
	n := 2
	for v >= 1<<(5*n+1) {
		n++
	}
	b := make([]byte, n)
	for i := n - 1; i > 0; i-- {
		b[i] = 0x80 | byte(v&0x3F)
		v >>= 6
	}
	b[0] = byte(0xFF<<(8-n)) | byte(v)
	return b
}

// BenchmarkWalk walks 60 s of 44.1 kHz 16-bit stereo written by flacenc (BenchmarkDecoder's
// stream): the FLAC output check's cost.
func BenchmarkWalk(b *testing.B) {
	t := &testing.T{}
	s := tone(44100*60, 2, 16)
	data := flacencStream(t, s, 2, 16, 4096)
	b.ReportAllocs()
	b.SetBytes(int64(len(s) * 2))
	for b.Loop() {
		if _, err := walk(data); err != nil {
			b.Fatal(err)
		}
	}
}
