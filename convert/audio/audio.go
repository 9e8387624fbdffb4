package audio

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"time"

	"github.com/convsvc/convsvc/convert"
)

// Version names the audio family's converters' output for the conversion cache
// (convert.Converter.Version): raise it whenever a change alters what they write, so cached
// outputs of the old code are never served.
const Version = "audio/1"

// Audio: wav, flac, mp3 and ogg (Vorbis) in; wav and flac out, through PCM, a block of a few
// thousand samples at a time, so memory does not grow with the length of the audio.
//
// WAV input: PCM of 8, 16, 24 or 32 bits, WAVE_FORMAT_EXTENSIBLE with fewer valid bits, and
// 32/64-bit float (converted to 24-bit integers). MP3 decodes to 16-bit stereo (go-mp3 keeps
// the encoder's delay and padding), Vorbis to 16-bit. WAV output keeps the source's depth
// (WAVE_FORMAT_EXTENSIBLE beyond 16 bits or 2 channels); FLAC output holds 8, 12, 16, 20 or 24
// bits, written by convert/internal/flacenc (fixed or LPC predictors per subframe) with no MD5 signature.
// WAV -> FLAC -> WAV gives back the same samples.

// Audio limits.
const (
	// AudioMaxChannels is FLAC's limit; WAV inputs with more channels are refused.
	AudioMaxChannels = 8
	// AudioMaxRate is the highest sample rate accepted (FLAC's limit).
	AudioMaxRate = 655350
	// AudioMaxSamples bounds the samples of all channels together, about 6.8 hours of 44.1 kHz
	// stereo; a header that claims more is refused before any decoding.
	AudioMaxSamples = 1 << 31
	// audioBlock is the frames per block: the FLAC block size, and the unit of reading.
	audioBlock = 4096
)

// pcmInfo describes a PCM stream.
type pcmInfo struct {
	rate     int
	channels int
	bits     int   // significant bits per sample, 4 to 32
	frames   int64 // samples per channel; -1 when the header does not say
}

// pcmSource yields PCM audio a block at a time.
type pcmSource interface {
	info() pcmInfo
	// read returns the next block, one slice per channel, all of one length greater than
	// zero; they are valid until the next call. It returns io.EOF after the last block.
	read() ([][]int32, error)
}

// rawPCM16 is implemented by sources that can also hand their blocks over as interleaved
// 16-bit little-endian frames (WAV's data layout), which writeWAV then copies as they are.
// readRaw16's bytes are valid until the next call; it returns io.EOF after the last block.
type rawPCM16 interface {
	readRaw16() ([]byte, error)
}

type audioCodec struct {
	id, name string
	open     func(ctx context.Context, in *io.SectionReader) (pcmSource, error)
}

var audioDecoders = []audioCodec{
	{"wav", "WAV", openWAV},
	{"flac", "FLAC", openFLAC},
	{"mp3", "MP3", openMP3},
	{"ogg", "Ogg Vorbis", openOgg},
}

// Register adds the audio formats and their converters.
func Register(c *convert.Catalog) {
	c.AddFormat(convert.Format{ID: "wav", Name: "WAV audio", Category: convert.CategoryAudio, Extensions: []string{"wav", "wave"}, MIME: "audio/wav"})
	c.AddFormat(convert.Format{ID: "flac", Name: "FLAC audio", Category: convert.CategoryAudio, Extensions: []string{"flac"}, MIME: "audio/flac"})
	c.AddFormat(convert.Format{ID: "mp3", Name: "MP3 audio", Category: convert.CategoryAudio, Extensions: []string{"mp3"}, MIME: "audio/mpeg"})
	c.AddFormat(convert.Format{ID: "ogg", Name: "Ogg Vorbis audio", Category: convert.CategoryAudio, Extensions: []string{"ogg", "oga"}, MIME: "audio/ogg"})
	for i := range audioDecoders {
		src := &audioDecoders[i]
		for _, to := range []string{"wav", "flac"} {
			if src.id != to {
				drops := []string{convert.WarnMetadataDropped}
				if src.id == "wav" {
					drops = append(drops, convert.WarnBitDepthReduced)
				}
				c.AddConverter(convert.Converter{Version: Version, From: src.id, To: to, Run: audioRun(src, to), Drops: drops, Counts: true})
			}
		}
	}
	registerVerifiers(c)
}

func audioRun(src *audioCodec, to string) func(context.Context, *io.SectionReader, io.Writer, convert.Params) error {
	return func(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
		s, err := openAudio(ctx, src, in)
		if err != nil {
			return err
		}
		reportAudioLosses(in, src, to, p)
		if to == "flac" {
			return writeFLAC(ctx, out, s, p)
		}
		if s.info().frames < 0 {
			// WAV states its length up front: count the samples first (only FLAC streams whose
			// header leaves it out get here), then decode again.
			n, err := countFrames(ctx, s)
			if err != nil {
				return err
			}
			if s, err = openAudio(ctx, src, in); err != nil {
				return err
			}
			return writeWAV(ctx, out, s, n, p)
		}
		return writeWAV(ctx, out, s, s.info().frames, p)
	}
}

// openAudio opens a source and checks its parameters against the limits.
func openAudio(ctx context.Context, codec *audioCodec, in *io.SectionReader) (pcmSource, error) {
	s, err := codec.open(ctx, in)
	if err != nil {
		return nil, err
	}
	inf := s.info()
	switch {
	case inf.channels < 1 || inf.channels > AudioMaxChannels:
		return nil, convert.Errorf(nil, "input has %d audio channels; at most %d are supported", inf.channels, AudioMaxChannels)
	case inf.rate < 1 || inf.rate > AudioMaxRate:
		return nil, convert.Errorf(nil, "input has a sample rate of %d Hz; from 1 to %d Hz is supported", inf.rate, AudioMaxRate)
	case inf.bits < 4 || inf.bits > 32:
		return nil, convert.Errorf(nil, "input has %d bits per sample; from 4 to 32 are supported", inf.bits)
	case inf.frames > AudioMaxSamples/int64(inf.channels):
		return nil, convert.Errorf(nil, "input is %s of %d-channel audio at %d Hz, over the limit of %d samples", duration(inf.frames, inf.rate), inf.channels, inf.rate, int64(AudioMaxSamples))
	}
	return s, nil
}

// duration formats a sample count as a time, for messages.
func duration(frames int64, rate int) string {
	return (time.Duration(float64(frames) / float64(rate) * float64(time.Second))).Round(time.Second).String()
}

// countFrames reads a source to its end and returns its length.
func countFrames(ctx context.Context, s pcmSource) (int64, error) {
	var n int64
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		block, err := s.read()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
		n += int64(len(block[0]))
		if n > AudioMaxSamples/int64(s.info().channels) {
			return 0, convert.Errorf(nil, "input holds more than %d samples, over the limit", int64(AudioMaxSamples))
		}
	}
}

// expectAudio checks an input's magic bytes; FLAC and MP3 may start with an ID3v2 tag.
func expectAudio(in *io.SectionReader, id, name string) error {
	head := make([]byte, convert.SniffLen)
	n, _ := in.ReadAt(head, 0)
	head = head[:n]
	if n == 0 {
		return convert.Errorf(nil, "input is not a valid %s file (it is empty)", name)
	}
	got, gotName := convert.Sniff(head)
	if got == "mp3" && string(head[:min(3, n)]) == "ID3" && n >= 10 {
		// Look past the tag: FLAC files may carry one too.
		size := int64(head[6]&0x7f)<<21 | int64(head[7]&0x7f)<<14 | int64(head[8]&0x7f)<<7 | int64(head[9]&0x7f) + 10
		if head[5]&0x10 != 0 {
			size += 10
		}
		after := make([]byte, convert.SniffLen)
		m, _ := in.ReadAt(after, size)
		if m > 0 {
			if a, aName := convert.Sniff(after[:m]); a != "" {
				got, gotName = a, aName
			}
		}
	}
	if id == "ogg" && n >= 4 && string(head[:4]) == "OggS" {
		switch {
		case bytesContains(head, "\x01vorbis"):
			return nil
		case bytesContains(head, "OpusHead"):
			return convert.Errorf(nil, "input is an Ogg Opus file; only Ogg Vorbis is supported")
		case bytesContains(head, "\x7fFLAC"):
			return convert.Errorf(nil, "input is an Ogg FLAC file; only Ogg Vorbis is supported")
		}
		return convert.Errorf(nil, "input is an Ogg file without a Vorbis stream; only Ogg Vorbis is supported")
	}
	if got == id {
		return nil
	}
	if gotName == "unrecognised data" {
		return convert.Errorf(nil, "input is not a valid %s file (unrecognised data)", name)
	}
	return convert.Errorf(nil, "input is not a valid %s file (it looks like %s)", name, gotName)
}

func bytesContains(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if string(b[i:i+len(s)]) == s {
			return true
		}
	}
	return false
}

// audioDecodeError turns a decoder's error into an *Error.
func audioDecodeError(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ce *convert.Error
	if errors.As(err, &ce) {
		return err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return convert.Errorf(err, "input is not a valid %s file (it is truncated)", name)
	}
	return convert.Errorf(err, "input is not a valid %s file (%v)", name, err)
}

// ---- WAV output ----

// wavHeader returns the RIFF header of a WAV file of frames samples per channel.
func wavHeader(inf pcmInfo, frames int64) ([]byte, int64, error) {
	container := (inf.bits + 7) / 8 * 8
	dataLen := frames * int64(inf.channels) * int64(container/8)
	extensible := inf.bits > 16 || inf.channels > 2 || container != inf.bits
	fmtLen := 16
	if extensible {
		fmtLen = 40
	}
	headerLen := 12 + 8 + fmtLen + 8
	pad := dataLen & 1
	if int64(headerLen)+dataLen+pad-8 > 0xFFFFFFFF {
		return nil, 0, convert.Errorf(nil, "the audio is %s, more than the 4 GiB a WAV file holds; convert to FLAC instead", convert.ByteSize(dataLen))
	}
	le := binary.LittleEndian
	h := make([]byte, headerLen)
	copy(h, "RIFF")
	le.PutUint32(h[4:], uint32(int64(headerLen)+dataLen+pad-8))
	copy(h[8:], "WAVEfmt ")
	le.PutUint32(h[16:], uint32(fmtLen))
	f := h[20:]
	blockAlign := inf.channels * container / 8
	le.PutUint16(f[0:], 1) // PCM
	le.PutUint16(f[2:], uint16(inf.channels))
	le.PutUint32(f[4:], uint32(inf.rate))
	le.PutUint32(f[8:], uint32(inf.rate*blockAlign))
	le.PutUint16(f[12:], uint16(blockAlign))
	le.PutUint16(f[14:], uint16(container))
	if extensible {
		le.PutUint16(f[0:], 0xFFFE)
		le.PutUint16(f[16:], 22)
		le.PutUint16(f[18:], uint16(inf.bits))
		le.PutUint32(f[20:], 0) // channel mask: unspecified
		copy(f[24:], wavSubformatPCM)
	}
	d := h[20+fmtLen:]
	copy(d, "data")
	le.PutUint32(d[4:], uint32(dataLen))
	return h, pad, nil
}

// wavSubformatPCM is KSDATAFORMAT_SUBTYPE_PCM.
var wavSubformatPCM = []byte{1, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xaa, 0, 0x38, 0x9b, 0x71}

// wavSubformatFloat is KSDATAFORMAT_SUBTYPE_IEEE_FLOAT.
var wavSubformatFloat = []byte{3, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xaa, 0, 0x38, 0x9b, 0x71}

// writeWAV writes frames samples per channel from s as WAV and checks that s holds exactly
// that many; it counts the samples written of frames as its progress (p.Progress).
func writeWAV(ctx context.Context, w io.Writer, s pcmSource, frames int64, p convert.Params) error {
	inf := s.info()
	h, pad, err := wavHeader(inf, frames)
	if err != nil {
		return err
	}
	cw := &convert.ContextWriter{Ctx: ctx, W: w}
	if _, err := cw.Write(h); err != nil {
		return err
	}
	container := (inf.bits + 7) / 8
	shift := uint(container*8 - inf.bits)
	var buf []byte
	var written int64
	raw, _ := s.(rawPCM16)
	for {
		if raw != nil && inf.bits == 16 {
			// The source's bytes are already WAV's data: no round trip through int32.
			b, err := raw.readRaw16()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			written += int64(len(b) / (2 * inf.channels))
			p.Progress(written, frames)
			if written > frames {
				return convert.Errorf(nil, "the input holds more samples than its header says (%d)", frames)
			}
			if _, err := cw.Write(b); err != nil {
				return err
			}
			continue
		}
		block, err := s.read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		n := len(block[0])
		written += int64(n)
		p.Progress(written, frames)
		if written > frames {
			return convert.Errorf(nil, "the input holds more samples than its header says (%d)", frames)
		}
		need := n * inf.channels * container
		if cap(buf) < need {
			buf = make([]byte, need)
		}
		buf = buf[:need]
		i := 0
		for k := 0; k < n; k++ {
			for _, ch := range block {
				v := ch[k] << shift
				switch container {
				case 1:
					buf[i] = byte(v + 128) // 8-bit WAV is unsigned
				case 2:
					binary.LittleEndian.PutUint16(buf[i:], uint16(v))
				case 3:
					buf[i], buf[i+1], buf[i+2] = byte(v), byte(v>>8), byte(v>>16)
				case 4:
					binary.LittleEndian.PutUint32(buf[i:], uint32(v))
				}
				i += container
			}
		}
		if _, err := cw.Write(buf); err != nil {
			return err
		}
	}
	if written != frames {
		return convert.Errorf(nil, "the input holds %d samples per channel, but its header says %d", written, frames)
	}
	if pad != 0 {
		_, err := cw.Write([]byte{0})
		return err
	}
	return nil
}
