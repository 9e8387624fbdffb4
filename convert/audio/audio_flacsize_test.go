package audio

import (
	"bytes"
	"context"
	"io"
	"slices"
	"testing"

	"github.com/mewkiz/flac"
	"github.com/mewkiz/flac/frame"
	"github.com/mewkiz/flac/meta"

	"github.com/convsvc/convsvc/convert"
)

// mewkizFLAC encodes s as the FLAC writer did before convert/internal/flacenc: mewkiz/flac's
// encoder (fixed predictors, one Rice partition) with the same blocks and stereo choice.
func mewkizFLAC(t *testing.T, s pcmSource) []byte {
	t.Helper()
	inf := s.info()
	var out bytes.Buffer
	enc, err := flac.NewEncoder(&out, &meta.StreamInfo{
		BlockSizeMin: audioBlock, BlockSizeMax: audioBlock, SampleRate: uint32(inf.rate),
		NChannels: uint8(inf.channels), BitsPerSample: uint8(inf.bits), NSamples: uint64(inf.frames),
	})
	if err != nil {
		t.Fatal(err)
	}
	chans := []frame.Channels{frame.ChannelsMono, frame.ChannelsLR}
	buf := make([][]int32, inf.channels)
	emit := func() {
		if len(buf[0]) == 0 {
			return
		}
		subs := make([]*frame.Subframe, inf.channels)
		for i := range subs {
			subs[i] = &frame.Subframe{SubHeader: frame.SubHeader{Pred: frame.PredVerbatim}, Samples: buf[i], NSamples: len(buf[i])}
		}
		f := &frame.Frame{Header: frame.Header{HasFixedBlockSize: true, BlockSize: uint16(len(buf[0])), SampleRate: uint32(inf.rate),
			Channels: chans[inf.channels-1], BitsPerSample: uint8(inf.bits)}, Subframes: subs}
		if inf.channels == 2 {
			f.Channels = oldStereoMode(buf[0], buf[1])
		}
		if err := enc.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
		for i := range buf {
			buf[i] = nil
		}
	}
	for {
		block, err := s.read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(block[0]); {
			take := min(audioBlock-len(buf[0]), len(block[0])-off)
			for i := range buf {
				buf[i] = append(buf[i], block[i][off:off+take]...)
			}
			off += take
			if len(buf[0]) == audioBlock {
				emit()
			}
		}
	}
	emit()
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// oldStereoMode is the stereo choice the mewkiz/flac path made.
func oldStereoMode(l, r []int32) frame.Channels {
	var sumL, sumR, sumM, sumS int64
	abs := func(v int64) int64 { return max(v, -v) }
	for i := 2; i < len(l); i++ {
		l0, l1, l2 := int64(l[i]), int64(l[i-1]), int64(l[i-2])
		r0, r1, r2 := int64(r[i]), int64(r[i-1]), int64(r[i-2])
		sumL += abs(l0 - 2*l1 + l2)
		sumR += abs(r0 - 2*r1 + r2)
		sumM += abs((l0+r0)>>1 - 2*((l1+r1)>>1) + (l2+r2)>>1)
		sumS += abs((l0 - r0) - 2*(l1-r1) + (l2 - r2))
	}
	best, mode := sumL+sumR, frame.ChannelsLR
	if c := sumL + sumS; c < best {
		best, mode = c, frame.ChannelsLeftSide
	}
	if c := sumS + sumR; c < best {
		best, mode = c, frame.ChannelsSideRight
	}
	if c := sumM + sumS; c < best {
		mode = frame.ChannelsMidSide
	}
	return mode
}

// TestAudio_FLACNoLargerThanMewkiz holds the FLAC writer's output on the real samples to at most
// the size mewkiz/flac's encoder (the writer before convert/internal/flacenc) makes of them.
func TestAudio_FLACNoLargerThanMewkiz(t *testing.T) {
	for _, name := range []string{"sample.wav", "sample-24bit.wav"} {
		t.Run(name, func(t *testing.T) {
			wav := readAudioSample(t, name)
			open := func() pcmSource {
				s, err := audioCodecByID("wav").open(context.Background(), io.NewSectionReader(bytes.NewReader(wav), 0, int64(len(wav))))
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			ref := mewkizFLAC(t, open())
			var ours bytes.Buffer
			if err := writeFLAC(context.Background(), &ours, open(), convert.Params{}); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: flacenc %d bytes, mewkiz/flac %d bytes", name, ours.Len(), len(ref))
			if ours.Len() > len(ref) {
				t.Fatalf("flacenc wrote %d bytes, mewkiz/flac %d", ours.Len(), len(ref))
			}
			_, want := decodeAudio(t, "wav", wav)
			if _, got := decodeAudio(t, "flac", ours.Bytes()); !slices.Equal(got, want) {
				t.Fatal("the FLAC does not decode to the WAV's samples")
			}
		})
	}
}
