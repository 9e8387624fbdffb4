package audio

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"

	"github.com/convsvc/convsvc/convert/internal/mp3dec"
	"github.com/jfreymuth/oggvorbis"

	"github.com/convsvc/convsvc/convert"
)

// mp3Source decodes MP3 with mp3dec (convsvc's faster copy of go-mp3), which always gives
// 16-bit stereo; it scans the frame headers once to learn the length.
type mp3Source struct {
	ctx   context.Context
	dec   *mp3dec.Decoder
	inf   pcmInfo
	raw   []byte
	chans [][]int32
	total int64
}

func openMP3(ctx context.Context, in *io.SectionReader) (pcmSource, error) {
	if err := expectAudio(in, "mp3", "MP3"); err != nil {
		return nil, err
	}
	// go-mp3 seeks to scan the whole file for its length: give it a section of its own.
	dec, err := mp3dec.NewDecoder(&cancelReadSeeker{ctx: ctx, rs: io.NewSectionReader(in, 0, in.Size())})
	if err != nil {
		return nil, audioDecodeError(ctx, "MP3", err)
	}
	frames := dec.Length() / 4
	if dec.Length() < 0 {
		frames = -1
	}
	s := &mp3Source{ctx: ctx, dec: dec, inf: pcmInfo{rate: dec.SampleRate(), channels: 2, bits: 16, frames: frames}}
	s.raw = make([]byte, audioBlock*4)
	s.chans = [][]int32{make([]int32, audioBlock), make([]int32, audioBlock)}
	return s, nil
}

func (s *mp3Source) info() pcmInfo { return s.inf }

func (s *mp3Source) read() ([][]int32, error) {
	raw, err := s.readRaw16()
	if err != nil {
		return nil, err
	}
	frames := len(raw) / 4
	l, r := s.chans[0][:frames], s.chans[1][:frames]
	for i := range frames {
		l[i] = int32(int16(binary.LittleEndian.Uint16(s.raw[4*i:])))
		r[i] = int32(int16(binary.LittleEndian.Uint16(s.raw[4*i+2:])))
	}
	s.chans[0], s.chans[1] = l, r
	return s.chans, nil
}

// readRaw16 returns the next block as the decoder writes it, 16-bit little-endian stereo
// frames (WAV's data layout), valid until the next call; io.EOF after the last block.
func (s *mp3Source) readRaw16() ([]byte, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, err
	}
	n, err := io.ReadFull(s.dec, s.raw)
	n -= n % 4
	if n == 0 {
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, io.EOF
		}
		return nil, audioDecodeError(s.ctx, "MP3", err)
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, audioDecodeError(s.ctx, "MP3", err)
	}
	s.total += int64(n / 4)
	return s.raw[:n], nil
}

// oggSource decodes Ogg Vorbis with oggvorbis, whose length (from the last page's granule
// position) is exact; samples become 16-bit.
type oggSource struct {
	ctx   context.Context
	r     *oggvorbis.Reader
	inf   pcmInfo
	buf   []float32
	chans [][]int32
}

func openOgg(ctx context.Context, in *io.SectionReader) (pcmSource, error) {
	if err := expectAudio(in, "ogg", "Ogg Vorbis"); err != nil {
		return nil, err
	}
	r, err := oggvorbis.NewReader(&cancelReadSeeker{ctx: ctx, rs: io.NewSectionReader(in, 0, in.Size())})
	if err != nil {
		return nil, audioDecodeError(ctx, "Ogg Vorbis", err)
	}
	ch := r.Channels()
	if ch < 1 || ch > AudioMaxChannels {
		return nil, convert.Errorf(nil, "input has %d audio channels; at most %d are supported", ch, AudioMaxChannels)
	}
	s := &oggSource{ctx: ctx, r: r, inf: pcmInfo{rate: r.SampleRate(), channels: ch, bits: 16, frames: r.Length()}}
	if s.inf.frames <= 0 {
		s.inf.frames = -1
	}
	s.buf = make([]float32, audioBlock*ch)
	s.chans = make([][]int32, ch)
	for i := range s.chans {
		s.chans[i] = make([]int32, audioBlock)
	}
	return s, nil
}

func (s *oggSource) info() pcmInfo { return s.inf }

func (s *oggSource) read() ([][]int32, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, err
	}
	n := 0
	for n < len(s.buf) {
		m, err := s.r.Read(s.buf[n:])
		n += m
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, audioDecodeError(s.ctx, "Ogg Vorbis", err)
		}
		if m == 0 {
			break
		}
	}
	frames := n / s.inf.channels
	if frames == 0 {
		return nil, io.EOF
	}
	for c := range s.chans {
		s.chans[c] = s.chans[c][:frames]
	}
	for i := range frames {
		for c := range s.chans {
			v := math.Round(float64(s.buf[i*s.inf.channels+c]) * 32768)
			s.chans[c][i] = int32(min(max(v, -32768), 32767))
		}
	}
	return s.chans, nil
}

// cancelReadSeeker is an io.ReadSeeker that stops reading once ctx is done.
type cancelReadSeeker struct {
	ctx context.Context
	rs  io.ReadSeeker
}

func (c *cancelReadSeeker) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.rs.Read(p)
}

func (c *cancelReadSeeker) Seek(off int64, whence int) (int64, error) { return c.rs.Seek(off, whence) }
