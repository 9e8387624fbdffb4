package image

import (
	"bytes"
	"compress/zlib"
	"io"

	"github.com/convsvc/convsvc/convert/internal/exif"
	"github.com/convsvc/convsvc/convert/internal/icc"
)

// maxMetaBlock bounds each metadata block read from an input (EXIF, XMP, ICC): a JPEG's
// APP1 is at most 64 KiB, and real profiles are far under icc.MaxSize.
const maxMetaBlock = icc.MaxSize

// imageMeta is the metadata of an input that a conversion acts on or carries.
type imageMeta struct {
	exif []byte // TIFF-structured EXIF block, from its "II*\0"/"MM\0*" header
	xmp  []byte // XMP packet
	icc  []byte // ICC profile
	// orientation is the EXIF orientation (1 to 8; 1 when absent), for TIFF its Orientation tag.
	orientation int
}

// readImageMeta reads the EXIF, XMP and ICC blocks of a JPEG, PNG, WebP or TIFF input (nothing
// for other formats), each bounded by maxMetaBlock, walking at most metaScanLimit segments or
// chunks; it never fails: a damaged block is left out.
func readImageMeta(in *io.SectionReader, src *Codec) imageMeta {
	var m imageMeta
	switch src.ID {
	case "jpeg":
		m = jpegMeta(in)
	case "png":
		m = pngMeta(in)
	case "webp":
		m = webpMeta(in)
	case "tiff":
		m = tiffMeta(in)
	}
	if len(m.exif) >= 6 && string(m.exif[:6]) == "Exif\x00\x00" {
		m.exif = m.exif[6:] // some writers keep JPEG's prefix in PNG and WebP
	}
	if m.orientation == 0 {
		m.orientation = exif.OrientationOf(m.exif)
	}
	return m
}

// readBlock reads n bytes at off, or nil when n is over maxMetaBlock or the read fails.
func readBlock(in io.ReaderAt, off, n int64) []byte {
	if n <= 0 || n > maxMetaBlock {
		return nil
	}
	b := make([]byte, n)
	if _, err := in.ReadAt(b, off); err != nil {
		return nil
	}
	return b
}

func jpegMeta(in *io.SectionReader) imageMeta {
	var m imageMeta
	var iccParts [][]byte
	jpegSegments(in, func(marker byte, off, n int64) bool {
		if marker != 0xE1 && marker != 0xE2 {
			return true
		}
		b := readBlock(in, off+4, n-2)
		switch {
		case marker == 0xE1 && bytes.HasPrefix(b, []byte("Exif\x00")) && len(b) > 6 && m.exif == nil:
			m.exif = b[6:]
		case marker == 0xE1 && bytes.HasPrefix(b, []byte("http://ns.adobe.com/xap/1.0/\x00")) && m.xmp == nil:
			m.xmp = b[29:]
		case marker == 0xE2 && bytes.HasPrefix(b, []byte("ICC_PROFILE\x00")) && len(b) > 14:
			seq := int(b[12])
			for len(iccParts) < seq {
				iccParts = append(iccParts, nil)
			}
			if seq >= 1 && iccParts[seq-1] == nil {
				iccParts[seq-1] = b[14:]
			}
		}
		return true
	})
	var prof []byte
	for _, p := range iccParts {
		if p == nil || len(prof)+len(p) > maxMetaBlock {
			prof = nil
			break
		}
		prof = append(prof, p...)
	}
	m.icc = prof
	return m
}

func pngMeta(in *io.SectionReader) imageMeta {
	var m imageMeta
	pngChunks(in, func(typ string, off int64, n uint32) bool {
		switch typ {
		case "eXIf":
			m.exif = readBlock(in, off, int64(n))
		case "iCCP":
			b := readBlock(in, off, int64(min(n, 1<<20)))
			if i := bytes.IndexByte(b, 0); i >= 0 && i+2 <= len(b) && b[i+1] == 0 {
				if zr, err := zlib.NewReader(bytes.NewReader(b[i+2:])); err == nil {
					prof, err := io.ReadAll(io.LimitReader(zr, maxMetaBlock+1))
					if err == nil && len(prof) <= maxMetaBlock {
						m.icc = prof
					}
				}
			}
		case "iTXt":
			b := readBlock(in, off, int64(n))
			if bytes.HasPrefix(b, []byte(pngXMPKey)) {
				m.xmp = b[len(pngXMPKey):]
			}
		case "IDAT":
			return m.exif == nil || m.icc == nil // eXIf may follow the image data
		case "IEND":
			return false
		}
		return true
	})
	return m
}

func webpMeta(in *io.SectionReader) imageMeta {
	var m imageMeta
	webpChunks(in, func(typ string, off, n int64) bool {
		switch typ {
		case "EXIF":
			m.exif = readBlock(in, off, n)
		case "XMP ":
			m.xmp = readBlock(in, off, n)
		case "ICCP":
			m.icc = readBlock(in, off, n)
		}
		return true
	})
	return m
}

// tiffMeta reads a TIFF's Orientation tag and ICC profile (tag 34675) from its first IFD.
func tiffMeta(in *io.SectionReader) imageMeta {
	var m imageMeta
	if f, ok, _ := exif.Orientation(in, in.Size()); ok {
		m.orientation = f.Value
	} else {
		m.orientation = 1
	}
	bo, ifd := tiffByteOrder(in)
	if bo == nil {
		return m
	}
	var c [2]byte
	if _, err := in.ReadAt(c[:], ifd); err != nil {
		return m
	}
	n := min(int(bo.Uint16(c[:])), metaScanLimit)
	entry := make([]byte, 12)
	for i := range n {
		if _, err := in.ReadAt(entry, ifd+2+int64(i)*12); err != nil {
			return m
		}
		if bo.Uint16(entry) == 34675 && bo.Uint16(entry[2:]) == 7 {
			cnt := int64(bo.Uint32(entry[4:]))
			if cnt > 4 {
				m.icc = readBlock(in, int64(bo.Uint32(entry[8:])), cnt)
			}
		}
	}
	return m
}
