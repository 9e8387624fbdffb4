// Package isobmff walks the boxes of an in-memory ISO base media file format payload
// (ISO/IEC 14496-12): the container of AVIF and HEIC, and the box layout JPEG XL's container
// borrows. It only splits bytes into boxes; what a box means is its reader's business.
package isobmff

import "encoding/binary"

// Box is one box found by Children, as slices of the walked payload (no copy).
type Box struct {
	// Type is the four-character box type, e.g. "ftyp" or "meta".
	Type string
	// Offset is where Payload starts in the walked slice.
	Offset int
	// Whole is the box with its header; Payload is what follows the header.
	Whole, Payload []byte
}

// Children splits b into the boxes it holds, in order: 32-bit sizes, 64-bit ones (size 1) and
// size 0 (the box runs to the end of b). A malformed tail (a header cut short, a size smaller
// than its header or running past the end) ends the list; what came before it stands.
func Children(b []byte) []Box {
	var boxes []Box
	for off := 0; len(b)-off >= 8; {
		size := uint64(binary.BigEndian.Uint32(b[off:]))
		hdrLen := uint64(8)
		switch size {
		case 1:
			if len(b)-off < 16 {
				return boxes
			}
			size, hdrLen = binary.BigEndian.Uint64(b[off+8:]), 16
		case 0:
			size = uint64(len(b) - off)
		}
		if size < hdrLen || size > uint64(len(b)-off) {
			return boxes
		}
		end := off + int(size)
		boxes = append(boxes, Box{Type: string(b[off+4 : off+8]), Offset: off + int(hdrLen), Whole: b[off:end], Payload: b[off+int(hdrLen) : end]})
		off = end
	}
	return boxes
}
