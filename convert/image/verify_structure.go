package image

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// structureChecks check the outputs whose full decode costs more than a tenth of the
// conversion's CPU (docs/benchmarks.md, "Output checks") by their structure instead of their
// pixels: every PNG chunk's CRC-32 and the IEND at the end, every JPEG segment and the EOI
// after the entropy-coded data, every WebP RIFF chunk inside the file, every TIFF strip or tile
// inside the file, every AVIF box inside the file. A file cut short fails each of them; a wrong pixel inside a well-framed
// stream does not.
var structureChecks = map[string]func(r *io.SectionReader) error{
	"png":  checkPNGChunks,
	"jpeg": checkJPEGMarkers,
	"webp": checkRIFF,
	"tiff": checkTIFFExtents,
	"avif": checkISOBoxes,
}

// checkISOBoxes walks an AVIF's top-level boxes: each inside the file, with ftyp, meta and
// the mdat that holds the coded image. Decoding it (the same libavif that encoded it, as
// WebAssembly) cost 27% of the conversion.
func checkISOBoxes(r *io.SectionReader) error {
	boxes, err := readISOBoxes(r, 0, r.Size())
	if err != nil {
		return fmt.Errorf("the AVIF's boxes do not fit the file: %w", err)
	}
	for _, typ := range []string{"ftyp", "meta", "mdat"} {
		if _, ok := findISOBox(boxes, typ); !ok {
			return fmt.Errorf("the AVIF has no %s box", typ)
		}
	}
	return nil
}

// checkPNGChunks walks a PNG's chunks, checking each CRC-32, and wants IDAT and a final IEND.
func checkPNGChunks(r *io.SectionReader) error {
	br := bufio.NewReaderSize(io.NewSectionReader(r, 0, r.Size()), 64<<10)
	sig := make([]byte, 8)
	if _, err := io.ReadFull(br, sig); err != nil || string(sig) != "\x89PNG\r\n\x1a\n" {
		return errors.New("the PNG signature is missing")
	}
	idat := false
	head := make([]byte, 8)
	for {
		if _, err := io.ReadFull(br, head); err != nil {
			return errors.New("the PNG ends before its IEND chunk: it was cut short")
		}
		n := int64(binary.BigEndian.Uint32(head[:4]))
		typ := string(head[4:8])
		h := crc32.NewIEEE()
		h.Write(head[4:8])
		if _, err := io.CopyN(h, br, n); err != nil {
			return fmt.Errorf("the PNG's %q chunk is cut short", typ)
		}
		var sum [4]byte
		if _, err := io.ReadFull(br, sum[:]); err != nil {
			return fmt.Errorf("the PNG's %q chunk lacks its CRC: it was cut short", typ)
		}
		if binary.BigEndian.Uint32(sum[:]) != h.Sum32() {
			return fmt.Errorf("the PNG's %q chunk fails its CRC", typ)
		}
		switch typ {
		case "IDAT":
			idat = true
		case "IEND":
			if !idat {
				return errors.New("the PNG has no image data")
			}
			return nil
		}
	}
}

// checkJPEGMarkers walks a JPEG's segments and entropy-coded data to its EOI marker.
func checkJPEGMarkers(r *io.SectionReader) error {
	br := bufio.NewReaderSize(io.NewSectionReader(r, 0, r.Size()), 64<<10)
	var soi [2]byte
	if _, err := io.ReadFull(br, soi[:]); err != nil || soi != [2]byte{0xFF, 0xD8} {
		return errors.New("the JPEG's SOI marker is missing")
	}
	cut := errors.New("the JPEG ends before its EOI marker: it was cut short")
	scans := 0
	m, err := nextMarker(br)
	for {
		if err != nil {
			return cut
		}
		switch {
		case m == 0xD9:
			if scans == 0 {
				return errors.New("the JPEG has no scan")
			}
			return nil
		case m == 0x01 || (m >= 0xD0 && m <= 0xD7):
			m, err = nextMarker(br)
			continue
		}
		var l [2]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return cut
		}
		n := int64(binary.BigEndian.Uint16(l[:])) - 2
		if n < 0 {
			return fmt.Errorf("the JPEG's marker %#x has a length below 2", m)
		}
		if _, err := br.Discard(int(n)); err != nil {
			return cut
		}
		if m != 0xDA {
			m, err = nextMarker(br)
			continue
		}
		scans++
		m, err = scanEntropy(br)
	}
}

// nextMarker reads the marker that must start here (0xFF, fill bytes, the code).
func nextMarker(br *bufio.Reader) (byte, error) {
	b, err := br.ReadByte()
	if err != nil {
		return 0, err
	}
	if b != 0xFF {
		return 0, errors.New("jpeg: a segment does not start with a marker")
	}
	for b == 0xFF {
		if b, err = br.ReadByte(); err != nil {
			return 0, err
		}
	}
	return b, nil
}

// scanEntropy skips entropy-coded data (stuffed 0xFF00 bytes and restart markers) and returns
// the marker that ends it.
func scanEntropy(br *bufio.Reader) (byte, error) {
	for {
		if _, err := br.ReadSlice(0xFF); err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			return 0, err
		}
		b, err := br.ReadByte()
		for err == nil && b == 0xFF {
			b, err = br.ReadByte()
		}
		if err != nil {
			return 0, err
		}
		if b == 0x00 || (b >= 0xD0 && b <= 0xD7) {
			continue
		}
		return b, nil
	}
}

// checkTIFFExtents follows a classic TIFF's chain of IFDs and wants every strip or tile
// (offsets and byte counts) inside the file. BigTIFF is checked by its first header only.
func checkTIFFExtents(r *io.SectionReader) error {
	// Every table is bounded by the file's size before it is read.
	var hdr [8]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return errors.New("the TIFF header is incomplete")
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if hdr[0] == 'M' {
		bo = binary.BigEndian
	}
	if bo.Uint16(hdr[2:]) == 43 {
		return nil // BigTIFF: the family does not write it
	}
	size := r.Size()
	off := int64(bo.Uint32(hdr[4:]))
	seen := map[int64]bool{}
	for off != 0 {
		if seen[off] || len(seen) > 10000 {
			return errors.New("the TIFF's IFDs loop")
		}
		seen[off] = true
		var cnt [2]byte
		if _, err := r.ReadAt(cnt[:], off); err != nil {
			return fmt.Errorf("the TIFF's IFD at %d is outside the file: it was cut short", off)
		}
		n := int64(bo.Uint16(cnt[:]))
		if off+2+12*n+4 > size {
			return fmt.Errorf("the TIFF's IFD at %d is cut short", off)
		}
		ifd := make([]byte, 12*n+4)
		if _, err := r.ReadAt(ifd, off+2); err != nil {
			return fmt.Errorf("the TIFF's IFD at %d is cut short", off)
		}
		var offsets, counts []int64
		for i := range n {
			e := ifd[12*i:]
			tag := bo.Uint16(e)
			switch tag {
			case 273, 324, 279, 325:
				vals, err := tiffValues(r, bo, e)
				if err != nil {
					return err
				}
				if tag == 273 || tag == 324 {
					offsets = vals
				} else {
					counts = vals
				}
			}
		}
		if len(offsets) == 0 || len(offsets) != len(counts) {
			return errors.New("the TIFF's strip or tile offsets and byte counts are missing or differ in number")
		}
		for i := range offsets {
			if offsets[i]+counts[i] > size {
				return fmt.Errorf("the TIFF's strip %d reaches byte %d of a %d-byte file: it was cut short", i, offsets[i]+counts[i], size)
			}
		}
		off = int64(bo.Uint32(ifd[12*n:]))
	}
	return nil
}

// tiffValues reads an IFD entry's SHORT or LONG values, inline or at their offset.
func tiffValues(r *io.SectionReader, bo binary.ByteOrder, e []byte) ([]int64, error) {
	typ, count := bo.Uint16(e[2:]), int64(bo.Uint32(e[4:]))
	width := int64(4)
	if typ == 3 {
		width = 2
	} else if typ != 4 {
		return nil, fmt.Errorf("the TIFF's strip entry has type %d", typ)
	}
	if count*width > r.Size() {
		return nil, errors.New("the TIFF's strip table is larger than the file: it was cut short")
	}
	data := e[8:12]
	if count*width > 4 {
		data = make([]byte, count*width)
		if _, err := r.ReadAt(data, int64(bo.Uint32(e[8:]))); err != nil {
			return nil, errors.New("the TIFF's strip table is outside the file: it was cut short")
		}
	}
	vals := make([]int64, count)
	for i := range vals {
		if width == 2 {
			vals[i] = int64(bo.Uint16(data[2*i:]))
		} else {
			vals[i] = int64(bo.Uint32(data[4*i:]))
		}
	}
	return vals, nil
}
