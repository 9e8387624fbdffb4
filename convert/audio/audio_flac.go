package audio

import (
	"bufio"
	"context"
	"errors"
	"io"

	"github.com/mewkiz/flac"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/flacdec"
	"github.com/convsvc/convsvc/convert/internal/flacenc"
)

// flacSource decodes a FLAC stream frame by frame (at most 65535 samples per channel each)
// with convert/internal/flacdec, or with mewkiz/flac for streams deeper than 24 bits.
type flacSource struct {
	ctx    context.Context
	dec    *flacdec.Decoder
	stream *flac.Stream
	inf    pcmInfo
	chans  [][]int32
	total  int64
}

func openFLAC(ctx context.Context, in *io.SectionReader) (pcmSource, error) {
	if err := expectAudio(in, "flac", "FLAC"); err != nil {
		return nil, err
	}
	dec, err := flacdec.NewDecoder(&convert.ContextReader{Ctx: ctx, R: io.NewSectionReader(in, 0, in.Size())})
	if err == nil {
		fi := dec.Info()
		s := &flacSource{ctx: ctx, dec: dec, inf: pcmInfo{rate: fi.Rate, channels: fi.Channels, bits: fi.Bits, frames: fi.Samples}}
		if fi.Samples == 0 {
			s.inf.frames = -1 // unknown
		}
		return s, nil
	}
	if !errors.Is(err, flacdec.ErrUnsupported) {
		return nil, audioDecodeError(ctx, "FLAC", err)
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
	if s.dec != nil {
		return s.readFlacdec()
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

// readFlacdec is read for the flacdec decoder (which checks channels and depth per frame).
func (s *flacSource) readFlacdec() ([][]int32, error) {
	chans, err := s.dec.Next()
	if err == io.EOF {
		if s.inf.frames >= 0 && s.total != s.inf.frames {
			return nil, convert.Errorf(nil, "input is not a valid FLAC file (it holds %d samples per channel, but its header says %d; is it truncated?)", s.total, s.inf.frames)
		}
		return nil, io.EOF
	}
	if err != nil {
		return nil, audioDecodeError(s.ctx, "FLAC", err)
	}
	s.total += int64(len(chans[0]))
	if s.total > AudioMaxSamples/int64(s.inf.channels) {
		return nil, convert.Errorf(nil, "input holds more than %d samples, over the limit", int64(AudioMaxSamples))
	}
	return chans, nil
}

// writeFLAC encodes s as FLAC in fixed blocks of audioBlock samples with convert/internal/flacenc
// (frames encoded in parallel). The STREAMINFO block carries the length when the source knows
// it; its MD5 signature is left unset (zero), which FLAC allows, since the header is written
// before the audio. Frames name their rate when FLAC has a code for it; 24 and 176.4 kHz are
// left to STREAMINFO because mewkiz/flac logs a line for every such frame it decodes. The
// samples read of the stated length are its progress (p.Progress; none when unstated).
func writeFLAC(ctx context.Context, w io.Writer, s pcmSource, p convert.Params) error {
	inf := s.info()
	switch inf.bits {
	case 8, 12, 16, 20, 24:
	default:
		return convert.Errorf(nil, "the input has %d-bit samples, but FLAC output supports 8, 12, 16, 20 or 24 bits", inf.bits)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	fi := flacenc.Info{Rate: inf.rate, Channels: inf.channels, Bits: inf.bits, BlockSize: audioBlock, FrameRate: true}
	if inf.frames > 0 {
		fi.Samples = inf.frames
	}
	cw := &convert.ContextWriter{Ctx: ctx, W: w}
	enc, err := flacenc.NewEncoder(cw, fi, 0)
	if err != nil {
		return flacWriteError(ctx, err)
	}
	buf := make([][]int32, inf.channels)
	for i := range buf {
		buf[i] = make([]int32, 0, audioBlock)
	}
	emit := func() error {
		if len(buf[0]) == 0 {
			return nil
		}
		if err := enc.Write(buf); err != nil {
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
		p.Progress(total, inf.frames)
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

// flacWriteError restores the context's error, which the encoder's wrapping may hide.
func flacWriteError(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
