package image

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"io"
	"strings"

	"github.com/convsvc/convsvc/convert"
)

// What a raster conversion cannot keep is reported as a warning on the job (convert.Params.Warn)
// rather than dropped silently (issue 23). What the job does not keep (finish.go):
//
//   - metadata: EXIF, XMP and text chunks of the input are not written (metadata_dropped),
//     unless strip_metadata is false and the target holds them (JPEG, PNG, WebP), or the job
//     asked for strip_metadata: true;
//   - colour profiles: a matrix/TRC RGB profile is converted to sRGB (or carried with the
//     metadata); any other (CMYK, lookup tables) is not written, and its pixels are written as
//     they are, as if they were sRGB (color_profile_dropped);
//   - transparency: JPEG and Netpbm composite it over white or the background option
//     (alpha_dropped); GIF keeps pixels
//     fully transparent or opaque, so a partly transparent pixel becomes transparent when less
//     than half opaque and is composited over white otherwise (alpha_dropped);
//   - animation: a target holding one image gets the first frame (animation_dropped), APNG
//     included (image/png decodes its default image);
//   - bit depth: 16-bit samples stay 16-bit in PNG, TIFF and Netpbm and become 8-bit
//     elsewhere (bit_depth_reduced);
//   - several images in one file: a multi-page TIFF gives its first page (pages_dropped), an
//     icon of several sizes its largest (images_dropped).
//
// docs/formats.md lists the same per target (keepsAndDrops).

// imageDrops lists the warnings a pair may report (Converter.Drops), as reportInputLosses
// and reportAlpha decide them.
func imageDrops(src, dst *Codec) []string {
	var d []string
	switch src.ID {
	case "jpeg", "png", "webp", "tiff":
		d = append(d, convert.WarnMetadataDropped, convert.WarnColorProfileDropped)
	}
	if noAlphaTargets[dst.ID] || dst.ID == "gif" {
		d = append(d, convert.WarnAlphaDropped)
	}
	if dst.FitMaxSide {
		d = append(d, convert.WarnImageResized)
	}
	if src.ID == "png" || src.frames != nil && dst.encodeAll == nil {
		d = append(d, convert.WarnAnimationDropped)
	}
	switch src.ID {
	case "tiff":
		d = append(d, convert.WarnPagesDropped)
	case "ico":
		d = append(d, convert.WarnImagesDropped)
	}
	if !wideTargets[dst.ID] {
		switch src.ID {
		case "png", "tiff", "ppm":
			d = append(d, convert.WarnBitDepthReduced)
		}
	}
	return d
}

// noAlphaTargets composite transparency over white.
var noAlphaTargets = map[string]bool{"jpeg": true, "ppm": true}

// wideTargets keep 16 bits per channel.
var wideTargets = map[string]bool{"png": true, "tiff": true, "ppm": true}

// metaScanLimit bounds how far the metadata scan walks a file's chunks or segments.
const metaScanLimit = 4096

// inputMetadata is what an input carries beside its pixels.
type inputMetadata struct {
	exif, xmp, text, icc bool
}

// reportInputLosses warns about what the input carries that no output keeps: metadata, a
// colour profile, frames past the first, 16 bits per channel. It reads a little of the file's
// structure and never fails the conversion.
//
// fin, when not nil, says what the job keeps or converts: metadata kept by strip_metadata
// false, a profile converted to sRGB or carried, are not losses.
func reportInputLosses(in *io.SectionReader, src, dst *Codec, cfg image.Config, frames int, fin *finisher, p convert.Params) {
	var md inputMetadata
	switch src.ID {
	case "jpeg":
		md = jpegMetadata(in)
	case "png":
		md = pngMetadata(in)
	case "webp":
		md = webpMetadata(in)
	case "tiff":
		md = tiffMetadata(in)
	}
	var kinds []string
	if md.exif {
		kinds = append(kinds, "EXIF")
	}
	if md.xmp {
		kinds = append(kinds, "XMP")
	}
	if md.text {
		kinds = append(kinds, "text chunks")
	}
	asked := fin != nil && fin.opts.StripMetadata != nil && *fin.opts.StripMetadata // strip_metadata: true, explicitly
	if len(kinds) > 0 && !asked && (fin == nil || !fin.metadataKept()) {
		p.Warn(convert.WarnMetadataDropped, fmt.Sprintf("the %s's %s metadata (camera, date, position, orientation...) was not written to the %s", src.Name, strings.Join(kinds, " and "), dst.Name))
	}
	if md.icc && (fin == nil || !fin.profileHandled()) {
		p.Warn(convert.WarnColorProfileDropped, fmt.Sprintf("the %s's embedded ICC colour profile was not written to the %s; its colours are written as if they were sRGB", src.Name, dst.Name))
	}
	if frames <= 1 {
		if n := stillFrameCount(in, src); n > 1 && dst.encodeAll == nil {
			p.Warn(convert.WarnAnimationDropped, fmt.Sprintf("the %s is an animation of %d frames; %s holds one image, so only the first frame was converted", src.Name, n, dst.Name))
		} else if n > 1 {
			p.Warn(convert.WarnAnimationDropped, fmt.Sprintf("the %s is an animation of %d frames (APNG); its animation is not read, so only the first frame was converted", src.Name, n))
		}
	}
	switch src.ID {
	case "tiff":
		if n := tiffPages(in); n > 1 {
			p.Warn(convert.WarnPagesDropped, fmt.Sprintf("the TIFF holds %d pages (images); only the first was converted", n))
		}
	case "ico":
		if n := icoImages(in); n > 1 {
			p.Warn(convert.WarnImagesDropped, fmt.Sprintf("the icon holds %d images (sizes); only the largest was converted", n))
		}
	}
	if is16Bit(cfg.ColorModel) && !wideTargets[dst.ID] {
		p.Warn(convert.WarnBitDepthReduced, fmt.Sprintf("the %s has 16 bits per channel; %s holds 8, so the samples were reduced to 8 bits", src.Name, dst.Name))
	}
}

// reportAlpha warns when an image with transparency goes to a target without it, or with
// partial transparency to GIF, whose pixels are either fully transparent or opaque.
func reportAlpha(img image.Image, src, dst *Codec, p convert.Params) {
	switch {
	case noAlphaTargets[dst.ID]:
		if o, ok := img.(interface{ Opaque() bool }); ok && o.Opaque() {
			return
		}
	case dst.ID == "gif":
		if !hasPartialAlpha(img) {
			return
		}
	default:
		return
	}
	warnAlpha(src, dst, p)
}

// warnAlpha reports that the source's transparent pixels were composited over white, when
// the target has no transparency, or thresholded and composited, when it is GIF.
func warnAlpha(src, dst *Codec, p convert.Params) {
	switch {
	case noAlphaTargets[dst.ID]:
		p.Warn(convert.WarnAlphaDropped, fmt.Sprintf("the %s has transparent pixels; %s has no transparency, so they were composited over white", src.Name, dst.Name))
	case dst.ID == "gif":
		p.Warn(convert.WarnAlphaDropped, fmt.Sprintf("the %s has partly transparent pixels; GIF has only fully transparent or opaque ones, so those less than half opaque were made transparent and the others composited over white", src.Name))
	}
}

// hasPartialAlpha reports whether any pixel of img is neither fully transparent nor opaque
// (for a paletted image: any palette entry).
func hasPartialAlpha(img image.Image) bool {
	if o, ok := img.(interface{ Opaque() bool }); ok && o.Opaque() {
		return false
	}
	partial8 := func(pix []byte, stride, w, h int) bool {
		for y := range h {
			row := pix[y*stride:]
			for i := 3; i < 4*w; i += 4 {
				if a := row[i]; a != 0 && a != 0xff {
					return true
				}
			}
		}
		return false
	}
	b := img.Bounds()
	switch m := img.(type) {
	case *image.NRGBA:
		return partial8(m.Pix, m.Stride, b.Dx(), b.Dy())
	case *image.RGBA:
		return partial8(m.Pix, m.Stride, b.Dx(), b.Dy())
	case *image.Paletted:
		for _, c := range m.Palette {
			if _, _, _, a := c.RGBA(); a != 0 && a != 0xffff {
				return true
			}
		}
		return false
	case *image.NYCbCrA:
		for _, a := range m.A {
			if a != 0 && a != 0xff {
				return true
			}
		}
		return false
	}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if _, _, _, a := img.At(x, y).RGBA(); a != 0 && a != 0xffff {
				return true
			}
		}
	}
	return false
}

// is16Bit reports whether a header's colour model has 16 bits per channel.
func is16Bit(m color.Model) bool {
	return m == color.Gray16Model || m == color.RGBA64Model || m == color.NRGBA64Model
}

// stillFrameCount counts the frames of an animation the conversion reduces to one: GIF and
// WebP by their codec's counter, APNG by its acTL chunk; 1 when unknown or not animated.
func stillFrameCount(in *io.SectionReader, src *Codec) int {
	if src.ID == "png" {
		return apngFrames(in)
	}
	if src.frames == nil {
		return 1
	}
	var n int
	if err := GuardCodec(src.Name+" frame counter", func() (err error) {
		n, err = src.frames(in)
		return err
	}); err != nil {
		return 1
	}
	return n
}

// pngChunks calls fn with the type and the data's offset and length of each chunk of a PNG,
// until fn returns false, the file ends or metaScanLimit chunks were seen.
func pngChunks(in *io.SectionReader, fn func(typ string, off int64, n uint32) bool) {
	off := int64(8)
	var h [8]byte
	for range metaScanLimit {
		if _, err := in.ReadAt(h[:], off); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(h[:4])
		if !fn(string(h[4:8]), off+8, n) {
			return
		}
		off += 12 + int64(n)
	}
}

// apngFrames returns the frame count an APNG's acTL chunk declares; 1 for a plain PNG.
func apngFrames(in *io.SectionReader) int {
	frames := 1
	pngChunks(in, func(typ string, off int64, n uint32) bool {
		switch typ {
		case "acTL":
			var b [4]byte
			if n >= 4 {
				if _, err := in.ReadAt(b[:], off); err == nil {
					frames = int(min(binary.BigEndian.Uint32(b[:]), 1<<20))
				}
			}
			return false
		case "IDAT":
			return false // acTL comes before the image data
		}
		return true
	})
	return max(frames, 1)
}

// pngMetadata looks for eXIf, iCCP and text chunks (iTXt XML:com.adobe.xmp is XMP).
func pngMetadata(in *io.SectionReader) inputMetadata {
	var md inputMetadata
	pngChunks(in, func(typ string, off int64, n uint32) bool {
		switch typ {
		case "eXIf":
			md.exif = true
		case "iCCP":
			md.icc = true
		case "iTXt":
			key := make([]byte, min(n, 17))
			in.ReadAt(key, off)
			if bytes.HasPrefix(key, []byte("XML:com.adobe.xmp")) {
				md.xmp = true
			} else {
				md.text = true
			}
		case "tEXt", "zTXt":
			md.text = true
		case "IEND":
			return false
		}
		return true
	})
	return md
}

// jpegMetadata walks the segments before the scan for APP1 Exif and XMP and APP2 ICC_PROFILE.
func jpegMetadata(in *io.SectionReader) inputMetadata {
	var md inputMetadata
	jpegSegments(in, func(marker byte, off, n int64) bool {
		if marker == 0xE1 || marker == 0xE2 {
			id := make([]byte, min(n-2, 29))
			if len(id) > 0 {
				in.ReadAt(id, off+4)
			}
			switch {
			case marker == 0xE1 && bytes.HasPrefix(id, []byte("Exif\x00")):
				md.exif = true
			case marker == 0xE1 && bytes.HasPrefix(id, []byte("http://ns.adobe.com/xap/1.0/\x00")):
				md.xmp = true
			case marker == 0xE2 && bytes.HasPrefix(id, []byte("ICC_PROFILE\x00")):
				md.icc = true
			}
		}
		return true
	})
	return md
}

// jpegSegments calls fn for each marker segment before the scan (at most metaScanLimit):
// its marker, the offset of its 0xFF and its length field n (the segment's bytes after the
// marker, length field included); fn returns false to stop.
func jpegSegments(in *io.SectionReader, fn func(marker byte, off, n int64) bool) {
	off := int64(2)
	var h [4]byte
	for range metaScanLimit {
		if _, err := in.ReadAt(h[:], off); err != nil || h[0] != 0xFF {
			return
		}
		marker := h[1]
		if marker == 0xFF { // fill byte
			off++
			continue
		}
		if marker == 0xDA || marker == 0xD9 { // start of scan, end of image
			return
		}
		n := int64(binary.BigEndian.Uint16(h[2:]))
		if !fn(marker, off, n) {
			return
		}
		off += 2 + n
	}
}

// webpChunks calls fn for each RIFF chunk of a WebP after its header (at most metaScanLimit):
// its type, the offset of its data and its size; fn returns false to stop.
func webpChunks(in *io.SectionReader, fn func(typ string, off, n int64) bool) {
	off := int64(12)
	var h [8]byte
	for range metaScanLimit {
		if _, err := in.ReadAt(h[:], off); err != nil {
			return
		}
		n := int64(binary.LittleEndian.Uint32(h[4:]))
		if !fn(string(h[:4]), off+8, n) {
			return
		}
		off += 8 + n + n&1
	}
}

// webpMetadata looks for the EXIF, XMP and ICCP chunks of an extended WebP.
func webpMetadata(in *io.SectionReader) inputMetadata {
	var md inputMetadata
	webpChunks(in, func(typ string, _, _ int64) bool {
		switch typ {
		case "EXIF":
			md.exif = true
		case "XMP ":
			md.xmp = true
		case "ICCP":
			md.icc = true
		}
		return true
	})
	return md
}

// tiffMetadata looks in the first IFD for the EXIF, GPS, XMP and ICC profile tags.
func tiffMetadata(in *io.SectionReader) inputMetadata {
	var md inputMetadata
	bo, ifd := tiffByteOrder(in)
	if bo == nil {
		return md // BigTIFF and others: not scanned
	}
	var c [2]byte
	if _, err := in.ReadAt(c[:], ifd); err != nil {
		return md
	}
	n := min(int(bo.Uint16(c[:])), metaScanLimit)
	entry := make([]byte, 12)
	for i := range n {
		if _, err := in.ReadAt(entry, ifd+2+int64(i)*12); err != nil {
			return md
		}
		switch bo.Uint16(entry) {
		case 34665, 34853: // Exif IFD, GPS IFD
			md.exif = true
		case 700:
			md.xmp = true
		case 34675:
			md.icc = true
		}
	}
	return md
}

// tiffByteOrder reads a classic TIFF header's byte order; nil for anything else.
func tiffByteOrder(in *io.SectionReader) (binary.ByteOrder, int64) {
	var h [8]byte
	if _, err := in.ReadAt(h[:], 0); err != nil {
		return nil, 0
	}
	var bo binary.ByteOrder
	switch string(h[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return nil, 0
	}
	if bo.Uint16(h[2:]) != 42 {
		return nil, 0
	}
	return bo, int64(bo.Uint32(h[4:]))
}

// tiffPages counts the IFDs of a classic TIFF's main chain (at most metaScanLimit).
func tiffPages(in *io.SectionReader) int {
	bo, ifd := tiffByteOrder(in)
	if bo == nil {
		return 1
	}
	seen := map[int64]bool{}
	n := 0
	for ifd != 0 && !seen[ifd] && n < metaScanLimit {
		seen[ifd] = true
		var c [2]byte
		if _, err := in.ReadAt(c[:], ifd); err != nil {
			break
		}
		var next [4]byte
		if _, err := in.ReadAt(next[:], ifd+2+int64(bo.Uint16(c[:]))*12); err != nil {
			n++
			break
		}
		n++
		ifd = int64(bo.Uint32(next[:]))
	}
	return max(n, 1)
}

// icoImages reads how many images an icon's directory lists.
func icoImages(in *io.SectionReader) int {
	var h [6]byte
	if _, err := in.ReadAt(h[:], 0); err != nil {
		return 1
	}
	return max(int(binary.LittleEndian.Uint16(h[4:])), 1)
}
