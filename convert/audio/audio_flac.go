package audio

import (
	"bufio"
	"context"
	"io"

	"github.com/mewkiz/flac"
	"github.com/mewkiz/flac/frame"
	"github.com/mewkiz/flac/meta"

	"github.com/convsvc/convsvc/convert"
)

// flacSource decodes a FLAC stream frame by frame (at most 65535 samples per channel each).
type flacSource struct {
	ctx    context.Context
	stream *flac.Stream
	inf    pcmInfo
	chans  [][]int32
	total  int64
}

func openFLAC(ctx context.Context, in *io.SectionReader) (pcmSource, error) {
	if err := expectAudio(in, "flac", "FLAC"); err != nil {
		return nil, err
	}
	r := bufio.NewReaderSize(&convert.ContextReader{Ctx: ctx, R: io.NewSectionReader(in, 0, in.Size())}, 64<<10)
	stream, err := flac.New(r)
	if err != nil {
		return nil, audioDecodeError(ctx, "FLAC", err)
	}
	si := stream.Info
	s := &flacSource{ctx: ctx, stream: stream, inf: pcmInfo{
		rate: int(si.SampleRate), channels: int(si.NChannels), bits: int(si.BitsPerSample), frames: int64(si.NSamples),
	}}
	if si.NSamples == 0 {
		s.inf.frames = -1 // unknown
	}
	s.chans = make([][]int32, s.inf.channels)
	return s, nil
}

func (s *flacSource) info() pcmInfo { return s.inf }

func (s *flacSource) read() ([][]int32, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, err
	}
	f, err := s.stream.ParseNext()
	if err == io.EOF {
		if s.inf.frames >= 0 && s.total != s.inf.frames {
			return nil, convert.Errorf(nil, "input is not a valid FLAC file (it holds %d samples per channel, but its header says %d; is it truncated?)", s.total, s.inf.frames)
		}
		return nil, io.EOF
	}
	if err != nil {
		return nil, audioDecodeError(s.ctx, "FLAC", err)
	}
	if len(f.Subframes) != s.inf.channels {
		return nil, convert.Errorf(nil, "input is not a valid FLAC file (a frame has %d channels, the stream %d)", len(f.Subframes), s.inf.channels)
	}
	if int(f.BitsPerSample) != s.inf.bits && f.BitsPerSample != 0 {
		return nil, convert.Errorf(nil, "input is not a valid FLAC file (a frame has %d bits per sample, the stream %d)", f.BitsPerSample, s.inf.bits)
	}
	n := len(f.Subframes[0].Samples)
	for i, sf := range f.Subframes {
		if len(sf.Samples) != n {
			return nil, convert.Errorf(nil, "input is not a valid FLAC file (its channels differ in length)")
		}
		s.chans[i] = sf.Samples
	}
	if n == 0 {
		return s.read()
	}
	s.total += int64(n)
	if s.total > AudioMaxSamples/int64(s.inf.channels) {
		return nil, convert.Errorf(nil, "input holds more than %d samples, over the limit", int64(AudioMaxSamples))
	}
	return s.chans, nil
}

// flacChannels maps a channel count to the FLAC channel assignment.
var flacChannels = []frame.Channels{
	frame.ChannelsMono, frame.ChannelsLR, frame.ChannelsLRC, frame.ChannelsLRLsRs,
	frame.ChannelsLRCLsRs, frame.ChannelsLRCLfeLsRs, frame.ChannelsLRCLfeCsSlSr, frame.ChannelsLRCLfeLsRsSlSr,
}

// writeFLAC encodes s as FLAC in fixed blocks of audioBlock samples. The STREAMINFO block
// carries the length when the source knows it; its MD5 signature is left unset (zero), which
// FLAC allows, since the header is written before the audio.
func writeFLAC(ctx context.Context, w io.Writer, s pcmSource) error {
	inf := s.info()
	switch inf.bits {
	case 8, 12, 16, 20, 24:
	default:
		return convert.Errorf(nil, "the input has %d-bit samples, but FLAC output supports 8, 12, 16, 20 or 24 bits", inf.bits)
	}
	si := &meta.StreamInfo{
		BlockSizeMin:  audioBlock,
		BlockSizeMax:  audioBlock,
		SampleRate:    uint32(inf.rate),
		NChannels:     uint8(inf.channels),
		BitsPerSample: uint8(inf.bits),
	}
	if inf.frames > 0 {
		si.NSamples = uint64(inf.frames)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	cw := &convert.ContextWriter{Ctx: ctx, W: w}
	enc, err := flac.NewEncoder(cw, si)
	if err != nil {
		return flacWriteError(ctx, err)
	}
	// Frames name their rate when FLAC has a code for it; 24 and 176.4 kHz are left to
	// STREAMINFO because mewkiz/flac logs a line for every such frame it decodes.
	rate := uint32(inf.rate)
	if rate == 24000 || rate == 176400 {
		rate = 0
	}
	buf := make([][]int32, inf.channels)
	for i := range buf {
		buf[i] = make([]int32, 0, audioBlock)
	}
	subframes := make([]*frame.Subframe, inf.channels)
	for i := range subframes {
		subframes[i] = &frame.Subframe{}
	}
	emit := func() error {
		n := len(buf[0])
		if n == 0 {
			return nil
		}
		for i := range subframes {
			*subframes[i] = frame.Subframe{SubHeader: frame.SubHeader{Pred: frame.PredVerbatim}, Samples: buf[i], NSamples: n}
		}
		f := &frame.Frame{
			Header: frame.Header{
				HasFixedBlockSize: true,
				BlockSize:         uint16(n),
				SampleRate:        rate,
				Channels:          flacChannels[inf.channels-1],
				BitsPerSample:     uint8(inf.bits),
			},
			Subframes: subframes,
		}
		if inf.channels == 2 {
			f.Channels = stereoMode(buf[0], buf[1])
		}
		if err := enc.WriteFrame(f); err != nil {
			return flacWriteError(ctx, err)
		}
		for i := range buf {
			buf[i] = buf[i][:0]
		}
		return nil
	}
	var total int64
	for {
		block, err := s.read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		total += int64(len(block[0]))
		for off := 0; off < len(block[0]); {
			take := min(audioBlock-len(buf[0]), len(block[0])-off)
			for i := range buf {
				buf[i] = append(buf[i], block[i][off:off+take]...)
			}
			off += take
			if len(buf[0]) == audioBlock {
				if err := emit(); err != nil {
					return err
				}
			}
		}
	}
	if err := emit(); err != nil {
		return err
	}
	if inf.frames > 0 && total != inf.frames {
		return convert.Errorf(nil, "the input holds %d samples per channel, but its header says %d", total, inf.frames)
	}
	if total == 0 {
		return convert.Errorf(nil, "the input holds no audio")
	}
	return flacWriteError(ctx, enc.Close())
}

// flacWriteError restores the context's error, which mewkiz/flac's error wrapping hides.
func flacWriteError(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// stereoMode picks the channel decorrelation with the smallest second-order residuals, as
// libFLAC's adaptive mid/side does by estimate.
func stereoMode(l, r []int32) frame.Channels {
	var sumL, sumR, sumM, sumS int64
	abs := func(v int64) int64 {
		if v < 0 {
			return -v
		}
		return v
	}
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
