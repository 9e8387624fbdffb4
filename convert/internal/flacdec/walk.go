package flacdec

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/convsvc/convsvc/convert/internal/flaccrc"
)

// maxFrameBytes bounds how far Walk looks for a frame's end: a frame of 65,535 samples of
// 8 channels of 32 bits stored verbatim is 2 MiB.
const maxFrameBytes = 4 << 20

// Walk reads the rest of the stream frame by frame without decoding the subframes, for a
// check that the stream is whole: every frame header must parse, match its CRC-8 and the
// stream's STREAMINFO, and carry the next frame number (or, with variable block sizes, the
// next sample number), and every frame's bytes must match its CRC-16. A frame ends where the
// next frame's header begins, or at the end of the input. It returns the samples per channel
// the frames hold. It reads streams of any depth, those NewDecoder answers with ErrUnsupported
// too, and costs about a tenth of decoding them (BenchmarkWalk, BenchmarkDecoder).
//
// A corrupted sample inside a frame whose CRC-16 still matches passes; so does nothing
// decoding would catch either, since the CRC-16 covers every byte.
func (d *Decoder) Walk() (int64, error) {
	var samples int64
	var frames uint64
	variable := false
	for {
		if more, err := d.ready(); err != nil || !more {
			return samples, err
		}
		p := d.buf[d.pos:]
		h, first, err := d.headerAt(p)
		if err == errShort {
			return samples, fmt.Errorf("flacdec: frame header: %w", io.ErrUnexpectedEOF)
		}
		if err != nil {
			return samples, err
		}
		if frames == 0 {
			variable = h.variable
		}
		if h.variable != variable || h.number != nextNumber(variable, frames, samples) {
			return samples, fmt.Errorf("flacdec: frame %d is numbered %d", frames, h.number)
		}
		n, err := d.frameEnd(p, first, variable, frames+1, samples+int64(h.samples))
		if err == errShort {
			if len(p) >= maxFrameBytes {
				return samples, fmt.Errorf("flacdec: frame %d runs past %d bytes", frames, maxFrameBytes)
			}
			if err := d.fill(2 * len(p)); err != nil {
				return samples, err
			}
			continue
		}
		if err != nil {
			return samples, fmt.Errorf("flacdec: frame %d: %w", frames, err)
		}
		d.pos += n
		frames++
		samples += int64(h.samples)
	}
}

// nextNumber is the number the next frame's header must carry: its frame number with a fixed
// block size, its first sample's number with a variable one.
func nextNumber(variable bool, frames uint64, samples int64) uint64 {
	if variable {
		return uint64(samples)
	}
	return frames
}

// headerAt reads the frame header p starts with and returns it with the smallest length a
// frame of it can have (header, one byte a subframe, the CRC-16).
func (d *Decoder) headerAt(p []byte) (frameHeader, int, error) {
	br := bitReader{p: p}
	h, err := d.header(&br, p)
	if err != nil && br.short {
		return h, 0, errShort
	}
	return h, br.bytePos() + d.info.Channels + 2, err
}

// frameEnd finds where the frame p starts with ends: at the first later header that parses
// and whose preceding bytes have a CRC-16 of zero, i.e. end in the frame's own CRC-16, which
// must carry the number the next frame must (after frames frames and samples samples); or at
// the end of the input when p's bytes do. errShort asks for more input. A header after bytes
// of another CRC-16 is passed over (a sync code inside the audio can look like one); one with
// the right number is named in the error if no end is found.
func (d *Decoder) frameEnd(p []byte, from int, variable bool, frames uint64, samples int64) (int, error) {
	suspect := -1
	for i := from; ; {
		k := bytes.IndexByte(p[min(i, len(p)):], 0xFF)
		if k < 0 || i+k+1 >= len(p) {
			switch {
			case !d.eof:
				return 0, errShort
			case len(p) >= from && flaccrc.CRC16(p) == 0:
				return len(p), nil
			case suspect >= 0:
				return 0, fmt.Errorf("the CRC-16 of the %d bytes before the next frame does not match", suspect)
			case len(p) < from:
				return 0, io.ErrUnexpectedEOF
			}
			return 0, errors.New("the last frame's CRC-16 does not match (the stream is cut or corrupted)")
		}
		k += i
		if p[k+1]&0xFE == 0xF8 {
			h, _, err := d.headerAt(p[k:])
			if err == errShort && !d.eof {
				return 0, errShort
			}
			if err == nil && h.variable == variable {
				want := nextNumber(variable, frames, samples)
				switch {
				case flaccrc.CRC16(p[:k]) != 0:
					if h.number == want && suspect < 0 {
						suspect = k
					}
				case h.number == want:
					return k, nil
				default:
					// Frames whose CRC-16s match end in a CRC-16 state of zero, so the bytes up
					// to any later frame pass too: only the numbers show a frame missing.
					return 0, fmt.Errorf("the next frame is numbered %d where %d was due (a frame is missing or repeated)", h.number, want)
				}
			}
		}
		i = k + 1
	}
}
