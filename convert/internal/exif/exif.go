// Package exif reads and rewrites the one EXIF field convsvc acts on, the orientation, in a
// TIFF-structured EXIF block (a JPEG APP1 payload after "Exif\0\0", a PNG eXIf chunk, a WebP
// EXIF chunk) or the first IFD of a TIFF file. It walks only IFD0, bounded by the block's
// size and MaxEntries, and never allocates more than the block.
package exif

import (
	"encoding/binary"
	"errors"
	"io"
)

// TagOrientation is the TIFF/EXIF tag holding the orientation (1 to 8).
const TagOrientation = 0x0112

// MaxEntries bounds the IFD entries read: a real IFD0 has a few dozen.
const MaxEntries = 1000

// ErrFormat reports a block that is not TIFF-structured data.
var ErrFormat = errors.New("exif: not a TIFF-structured block")

// Field locates the orientation in a block: Offset is where its 2-byte value sits.
type Field struct {
	Value  int
	Offset int64
	Order  binary.ByteOrder
}

// Orientation reads IFD0's orientation from r (size bytes, starting at the TIFF header: "II*\0"
// or "MM\0*"). ok is false when the block has no orientation or its value is not 1 to 8; err
// is set only when the block is not TIFF-structured or is cut short.
func Orientation(r io.ReaderAt, size int64) (f Field, ok bool, err error) {
	var hdr [8]byte
	if size < 8 {
		return Field{}, false, ErrFormat
	}
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return Field{}, false, ErrFormat
	}
	var bo binary.ByteOrder
	switch {
	case hdr[0] == 'I' && hdr[1] == 'I' && hdr[2] == 42 && hdr[3] == 0:
		bo = binary.LittleEndian
	case hdr[0] == 'M' && hdr[1] == 'M' && hdr[2] == 0 && hdr[3] == 42:
		bo = binary.BigEndian
	default:
		return Field{}, false, ErrFormat
	}
	off := int64(bo.Uint32(hdr[4:]))
	if off < 8 || off+2 > size {
		return Field{}, false, io.ErrUnexpectedEOF
	}
	var cnt [2]byte
	if _, err := r.ReadAt(cnt[:], off); err != nil {
		return Field{}, false, io.ErrUnexpectedEOF
	}
	n := int64(bo.Uint16(cnt[:]))
	n = min(n, MaxEntries, (size-off-2)/12)
	var e [12]byte
	for i := int64(0); i < n; i++ {
		pos := off + 2 + 12*i
		if _, err := r.ReadAt(e[:], pos); err != nil {
			return Field{}, false, io.ErrUnexpectedEOF
		}
		if bo.Uint16(e[:]) != TagOrientation {
			continue
		}
		// SHORT, count 1: the value is in the entry's first two value bytes.
		if bo.Uint16(e[2:]) != 3 || bo.Uint32(e[4:]) != 1 {
			return Field{}, false, nil
		}
		v := int(bo.Uint16(e[8:]))
		if v < 1 || v > 8 {
			return Field{}, false, nil
		}
		return Field{Value: v, Offset: pos + 8, Order: bo}, true, nil
	}
	return Field{}, false, nil
}

// OrientationOf is Orientation on a block in memory; 1 when it has none.
func OrientationOf(block []byte) int {
	f, ok, _ := Orientation(bytesReaderAt(block), int64(len(block)))
	if !ok {
		return 1
	}
	return f.Value
}

// WithOrientation returns a copy of block whose orientation is v; block itself when it has
// no orientation field (nothing to reset).
func WithOrientation(block []byte, v int) []byte {
	f, ok, _ := Orientation(bytesReaderAt(block), int64(len(block)))
	if !ok || f.Value == v {
		return block
	}
	out := append([]byte(nil), block...)
	f.Order.PutUint16(out[f.Offset:], uint16(v))
	return out
}

type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
