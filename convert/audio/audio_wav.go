package audio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"

	"github.com/convsvc/convsvc/convert"
)

// wavSource streams the data chunk of a RIFF/WAVE file; it never trusts the header's sizes
// beyond what the file holds.
type wavSource struct {
	ctx       context.Context
	inf       pcmInfo
	r         *bufio.Reader
	container int  // bytes per sample
	shift     uint // container bits - valid bits
	float     bool
	left      int64 // frames still to read
	raw       []byte
	chans     [][]int32
}

func openWAV(ctx context.Context, in *io.SectionReader) (pcmSource, error) {
	if err := expectAudio(in, "wav", "WAV"); err != nil {
		return nil, err
	}
	bad := func(format string, args ...any) error {
		return convert.Errorf(nil, "input is not a valid WAV file ("+format+")", args...)
	}
	le := binary.LittleEndian
	size := in.Size()
	var (
		haveFmt          bool
		tag              uint16
		channels         int
		rate             int
		blockAlign       int
		bits, validBits  int
		subformat        []byte
		dataOff, dataLen int64
		haveData         bool
	)
	off := int64(12)
	for !haveData {
		var ch [8]byte
		if _, err := in.ReadAt(ch[:], off); err != nil {
			if !haveFmt {
				return nil, bad("it has no fmt chunk")
			}
			return nil, bad("it has no data chunk")
		}
		id, n := string(ch[:4]), int64(le.Uint32(ch[4:]))
		body := off + 8
		switch id {
		case "fmt ":
			if n < 16 || n > 1024 {
				return nil, bad("its fmt chunk is %d bytes long", n)
			}
			f := make([]byte, n)
			if _, err := in.ReadAt(f, body); err != nil {
				return nil, bad("it is truncated")
			}
			tag = le.Uint16(f)
			channels = int(le.Uint16(f[2:]))
			rate = int(le.Uint32(f[4:]))
			blockAlign = int(le.Uint16(f[12:]))
			bits = int(le.Uint16(f[14:]))
			validBits = bits
			if tag == 0xFFFE {
				if n < 40 {
					return nil, bad("its extensible fmt chunk is %d bytes long", n)
				}
				validBits = int(le.Uint16(f[18:]))
				subformat = f[24:40]
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return nil, bad("its data chunk comes before the fmt chunk")
			}
			dataOff, dataLen, haveData = body, n, true
			if avail := size - body; n > avail {
				// 0 and 0xFFFFFFFF are what streaming writers put before they know the length.
				if n != 0xFFFFFFFF {
					return nil, bad("its header claims %s of audio, but the file holds %s", convert.ByteSize(n), convert.ByteSize(max(avail, 0)))
				}
				dataLen = avail
			} else if n == 0 && avail > 0 {
				dataLen = avail
			}
		default:
			if off+8+n > size {
				return nil, bad("its %q chunk runs past the end of the file", id)
			}
		}
		off = body + n + n&1
	}
	float := false
	switch {
	case tag == 1:
	case tag == 3:
		float = true
	case tag == 0xFFFE && bytes.Equal(subformat, wavSubformatPCM):
	case tag == 0xFFFE && bytes.Equal(subformat, wavSubformatFloat):
		float = true
	case tag == 0xFFFE:
		return nil, convert.Errorf(nil, "input is a WAV file with a compressed subformat, which is not supported (only PCM and float)")
	default:
		return nil, convert.Errorf(nil, "input is a WAV file with compression (format tag %d), which is not supported (only PCM and float)", tag)
	}
	if channels < 1 || channels > AudioMaxChannels {
		return nil, convert.Errorf(nil, "input has %d audio channels; at most %d are supported", channels, AudioMaxChannels)
	}
	container := bits / 8
	switch {
	case float && bits != 32 && bits != 64,
		!float && (bits%8 != 0 || bits < 8 || bits > 32),
		validBits < 1 || validBits > bits || float && validBits != bits:
		return nil, convert.Errorf(nil, "input is a WAV file with %d-bit samples (%d valid), which is not supported", bits, validBits)
	case blockAlign != channels*container:
		return nil, bad("its block alignment %d does not match %d channels of %d bits", blockAlign, channels, bits)
	}
	s := &wavSource{
		ctx:       ctx,
		r:         bufio.NewReaderSize(io.NewSectionReader(in, dataOff, dataLen), 64<<10),
		container: container,
		shift:     uint(bits - validBits),
		float:     float,
		left:      dataLen / int64(blockAlign),
		inf:       pcmInfo{rate: rate, channels: channels, bits: validBits, frames: dataLen / int64(blockAlign)},
	}
	if float {
		s.inf.bits = 24
	}
	s.chans = make([][]int32, channels)
	for i := range s.chans {
		s.chans[i] = make([]int32, audioBlock)
	}
	s.raw = make([]byte, audioBlock*blockAlign)
	return s, nil
}

func (s *wavSource) info() pcmInfo { return s.inf }

func (s *wavSource) read() ([][]int32, error) {
	if s.left == 0 {
		return nil, io.EOF
	}
	if err := s.ctx.Err(); err != nil {
		return nil, err
	}
	n := int(min(s.left, audioBlock))
	raw := s.raw[:n*s.inf.channels*s.container]
	if _, err := io.ReadFull(s.r, raw); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, convert.Errorf(err, "input is not a valid WAV file (it is truncated)")
		}
		return nil, convert.Errorf(err, "could not read the input")
	}
	s.left -= int64(n)
	for c := range s.chans {
		s.chans[c] = s.chans[c][:n]
	}
	le := binary.LittleEndian
	i := 0
	for k := 0; k < n; k++ {
		for c := range s.chans {
			var v int32
			switch {
			case s.float && s.container == 4:
				v = floatTo24(float64(math.Float32frombits(le.Uint32(raw[i:]))))
			case s.float:
				v = floatTo24(math.Float64frombits(le.Uint64(raw[i:])))
			case s.container == 1:
				v = int32(raw[i]) - 128
			case s.container == 2:
				v = int32(int16(le.Uint16(raw[i:])))
			case s.container == 3:
				v = int32(uint32(raw[i])<<8|uint32(raw[i+1])<<16|uint32(raw[i+2])<<24) >> 8
			default:
				v = int32(le.Uint32(raw[i:]))
			}
			s.chans[c][k] = v >> s.shift
			i += s.container
		}
	}
	return s.chans, nil
}

// floatTo24 scales a float sample in [-1, 1] to 24 bits, clipping beyond.
func floatTo24(f float64) int32 {
	const scale = 1 << 23
	v := math.Round(f * scale)
	switch {
	case v != v: // NaN
		return 0
	case v > scale-1:
		return scale - 1
	case v < -scale:
		return -scale
	}
	return int32(v)
}
