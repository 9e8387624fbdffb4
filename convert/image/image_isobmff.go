package image

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/convsvc/convsvc/convert/internal/isobmff"
)

// isoBox is one box of an ISOBMFF file (AVIF, HEIC) or of a JPEG XL container, located
// by its payload.
type isoBox struct {
	typ  string
	off  int64 // payload offset
	size int64 // payload size
}

// maxTopLevelBoxes bounds the boxes walked at the top level of a file; real files have a handful.
const maxTopLevelBoxes = 4096

// readISOBoxes lists the boxes in r between start and end, reading only their headers. A box
// running past end means the file is truncated.
func readISOBoxes(r io.ReaderAt, start, end int64) ([]isoBox, error) {
	var boxes []isoBox
	var hdr [16]byte
	for off := start; off < end; {
		if len(boxes) == maxTopLevelBoxes {
			return nil, fmt.Errorf("more than %d boxes", maxTopLevelBoxes)
		}
		if end-off < 8 {
			return nil, io.ErrUnexpectedEOF
		}
		if _, err := r.ReadAt(hdr[:8], off); err != nil {
			return nil, err
		}
		size := int64(binary.BigEndian.Uint32(hdr[:4]))
		typ := string(hdr[4:8])
		hdrLen := int64(8)
		switch size {
		case 1:
			if end-off < 16 {
				return nil, io.ErrUnexpectedEOF
			}
			if _, err := r.ReadAt(hdr[8:16], off+8); err != nil {
				return nil, err
			}
			size, hdrLen = int64(binary.BigEndian.Uint64(hdr[8:16])), 16
		case 0:
			size = end - off // to the end of the file
		}
		if size < hdrLen {
			return nil, fmt.Errorf("box %q of %d bytes", typ, size)
		}
		if size > end-off {
			return nil, fmt.Errorf("box %q runs past the end: %w", typ, io.ErrUnexpectedEOF)
		}
		boxes = append(boxes, isoBox{typ: typ, off: off + hdrLen, size: size - hdrLen})
		off += size
	}
	return boxes, nil
}

// childISOBoxes splits an in-memory payload into boxes (isobmff.Children); malformed tails
// are ignored.
func childISOBoxes(b []byte) []isoBox {
	var boxes []isoBox
	for _, x := range isobmff.Children(b) {
		boxes = append(boxes, isoBox{typ: x.Type, off: int64(x.Offset), size: int64(len(x.Payload))})
	}
	return boxes
}

func findISOBox(boxes []isoBox, typ string) (isoBox, bool) {
	for _, b := range boxes {
		if b.typ == typ {
			return b, true
		}
	}
	return isoBox{}, false
}

// payload returns the bytes of a box found by childISOBoxes in b.
func (x isoBox) payload(b []byte) []byte { return b[x.off : x.off+x.size] }

// heifImageInfo is what the meta box of an AVIF or HEIC file says about its primary image.
type heifImageInfo struct {
	width, height int // as stored, before rotation
	rotation      int // irot angle in quarter turns anticlockwise
	mirror        int // 0: no imir; 1 + imir's axis bit
}

// maxMetaBox bounds the meta box read into memory: item tables of huge grids stay far below it.
const maxMetaBox = 16 << 20

var errNoImageSize = errors.New("no image size in the header")

// readHEIFInfo finds the primary image's size (ispe) and rotation (irot) in the meta box of an
// AVIF/HEIC file whose top-level boxes are given; for an image sequence without a meta box it
// falls back to the first track's header (tkhd).
func readHEIFInfo(r io.ReaderAt, top []isoBox) (heifImageInfo, error) {
	var info heifImageInfo
	meta, ok := findISOBox(top, "meta")
	if !ok {
		return readTrackSize(r, top)
	}
	if meta.size > maxMetaBox {
		return info, fmt.Errorf("meta box of %d bytes", meta.size)
	}
	if meta.size < 4 {
		return info, errNoImageSize
	}
	data := make([]byte, meta.size)
	if _, err := r.ReadAt(data, meta.off); err != nil {
		return info, err
	}
	data = data[4:] // FullBox version and flags
	children := childISOBoxes(data)

	primary := -1
	if pitm, ok := findISOBox(children, "pitm"); ok {
		p := pitm.payload(data)
		switch {
		case len(p) >= 6 && p[0] == 0:
			primary = int(binary.BigEndian.Uint16(p[4:]))
		case len(p) >= 8:
			primary = int(binary.BigEndian.Uint32(p[4:]))
		default:
			return info, errors.New("malformed pitm box")
		}
	}
	iprp, ok := findISOBox(children, "iprp")
	if !ok {
		return info, errNoImageSize
	}
	iprpData := iprp.payload(data)
	var props []isoBox
	var ipma []byte
	for _, b := range childISOBoxes(iprpData) {
		switch b.typ {
		case "ipco":
			ipco := b.payload(iprpData)
			for _, p := range childISOBoxes(ipco) {
				props = append(props, isoBox{typ: p.typ, off: p.off + b.off, size: p.size})
			}
		case "ipma":
			ipma = b.payload(iprpData)
		}
	}
	indices := ipmaIndices(ipma, primary)
	if primary < 0 || indices == nil {
		// No association known: take every property, as readers of such files do.
		for i := range props {
			indices = append(indices, i+1)
		}
	}
	found := false
	for _, idx := range indices {
		if idx < 1 || idx > len(props) {
			continue
		}
		p := props[idx-1]
		pd := p.payload(iprpData)
		switch p.typ {
		case "ispe":
			if len(pd) >= 12 && !found {
				info.width = int(binary.BigEndian.Uint32(pd[4:]))
				info.height = int(binary.BigEndian.Uint32(pd[8:]))
				found = true
			}
		case "irot":
			if len(pd) >= 1 {
				info.rotation = int(pd[0] & 3)
			}
		case "imir":
			if len(pd) >= 1 {
				info.mirror = 1 + int(pd[0]&1)
			}
		}
	}
	if !found {
		return info, errNoImageSize
	}
	return info, nil
}

// ipmaIndices returns the (1-based) property indices associated with an item, or nil.
func ipmaIndices(ipma []byte, item int) []int {
	if len(ipma) < 8 || item < 0 {
		return nil
	}
	version, wide := ipma[0], ipma[3]&1 != 0
	count := int(binary.BigEndian.Uint32(ipma[4:]))
	off := 8
	for i := 0; i < count; i++ {
		var id int
		if version < 1 {
			if off+2 > len(ipma) {
				return nil
			}
			id = int(binary.BigEndian.Uint16(ipma[off:]))
			off += 2
		} else {
			if off+4 > len(ipma) {
				return nil
			}
			id = int(binary.BigEndian.Uint32(ipma[off:]))
			off += 4
		}
		if off >= len(ipma) {
			return nil
		}
		n := int(ipma[off])
		off++
		var indices []int
		for j := 0; j < n; j++ {
			if wide {
				if off+2 > len(ipma) {
					return nil
				}
				indices = append(indices, int(binary.BigEndian.Uint16(ipma[off:])&0x7fff))
				off += 2
			} else {
				if off >= len(ipma) {
					return nil
				}
				indices = append(indices, int(ipma[off]&0x7f))
				off++
			}
		}
		if id == item {
			return indices
		}
	}
	return nil
}

// readTrackSize reads the display size of the first track of a sequence (moov/trak/tkhd).
func readTrackSize(r io.ReaderAt, top []isoBox) (heifImageInfo, error) {
	moov, ok := findISOBox(top, "moov")
	if !ok || moov.size > maxMetaBox {
		return heifImageInfo{}, errNoImageSize
	}
	data := make([]byte, moov.size)
	if _, err := r.ReadAt(data, moov.off); err != nil {
		return heifImageInfo{}, err
	}
	trak, ok := findISOBox(childISOBoxes(data), "trak")
	if !ok {
		return heifImageInfo{}, errNoImageSize
	}
	trakData := trak.payload(data)
	tkhd, ok := findISOBox(childISOBoxes(trakData), "tkhd")
	if !ok {
		return heifImageInfo{}, errNoImageSize
	}
	p := tkhd.payload(trakData)
	// Width and height close the box as 16.16 fixed-point numbers, in either version.
	if len(p) < 84 {
		return heifImageInfo{}, errNoImageSize
	}
	return heifImageInfo{
		width:  int(binary.BigEndian.Uint32(p[len(p)-8:]) >> 16),
		height: int(binary.BigEndian.Uint32(p[len(p)-4:]) >> 16),
	}, nil
}
