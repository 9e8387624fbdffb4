package image

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"io"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/exif"
	"github.com/convsvc/convsvc/convert/internal/icc"
)

// MaxBytesMinQuality is the lowest quality a max_bytes search tries: below it a JPEG or WebP
// is blocks and smears, which nobody asks for by asking for fewer bytes.
const MaxBytesMinQuality = 10

// MaxBytesEncodes bounds the encodes of a max_bytes search: the requested (or default)
// quality, the lowest, and a binary search between them of at most five more.
const MaxBytesEncodes = 7

// metaTargets are the targets that carry metadata when strip_metadata is false.
var metaTargets = map[string]bool{"jpeg": true, "png": true, "webp": true}

// finisher does what follows resampling: the turn, the colour conversion, flattening, and the
// encode with metadata and max_bytes. Every single-image path ends in it.
type finisher struct {
	src, dst *Codec
	p        convert.Params
	opts     convert.Options
	g        geometry
	meta     imageMeta
	// toSRGB converts the input's profile to sRGB; nil when there is none to convert.
	toSRGB *icc.Transform
	// cmyk converts a CMYK input's pixels through its profile to sRGB as they are decoded
	// (cmykPixels); nil when the input has no CMYK profile this package reads.
	cmyk *icc.CMYKTransform
	// keepICC carries the input's profile into the output instead.
	keepICC bool
}

// newFinisher plans the colour handling of an input: its profile is converted to sRGB, or
// carried when the job keeps metadata and the target holds profiles. A profile that cannot
// be converted is reported as dropped (written as if sRGB), as before.
func newFinisher(src, dst *Codec, p convert.Params, g geometry, meta imageMeta) *finisher {
	f := &finisher{src: src, dst: dst, p: p, opts: p.Options, g: g, meta: meta}
	if len(meta.icc) == 0 {
		return f
	}
	if cp, err := icc.ParseCMYK(meta.icc); err == nil && src.ID == "jpeg" {
		// Converted whatever strip_metadata says: a CMYK profile does not describe the RGB
		// output, so carrying it would mislabel the pixels. JPEG only: its decoders are the
		// ones whose CMYK pixels every path sees (TIFF's strips become RGB on the way).
		f.cmyk = cp.ToSRGB()
		return f
	}
	if f.opts.KeepMetadata() && metaTargets[dst.ID] {
		f.keepICC = true
		return f
	}
	prof, err := icc.Parse(meta.icc)
	if err == nil {
		f.toSRGB = prof.ToSRGB()
	}
	return f
}

// colourPlain reports whether the pixels need no colour work (the strip-to-strip streams do none).
func (f *finisher) colourPlain() bool { return f.toSRGB == nil && f.cmyk == nil }

// cmykPixels converts a decoded CMYK image through the input's CMYK profile, in place, to
// opaque sRGB; any other image, or an input without such a profile, is returned as it is.
func (f *finisher) cmykPixels(img image.Image) image.Image {
	if m, ok := img.(*image.CMYK); ok && f.cmyk != nil {
		return f.cmyk.ConvertCMYK(m)
	}
	return img
}

// profileHandled reports whether the input's profile was converted or carried (so no
// color_profile_dropped warning is due).
func (f *finisher) profileHandled() bool {
	if len(f.meta.icc) == 0 || f.keepICC || f.cmyk != nil {
		return true
	}
	prof, err := icc.Parse(f.meta.icc)
	return err == nil && (f.toSRGB != nil || prof.ToSRGB() == nil)
}

// metadataKept reports whether the input's EXIF/XMP go into the output.
func (f *finisher) metadataKept() bool { return f.opts.KeepMetadata() && metaTargets[f.dst.ID] }

// finish turns, converts and encodes img (the resampled box, in stored orientation).
func (f *finisher) finish(ctx context.Context, out io.Writer, img image.Image) error {
	img = applyD4(img, f.g.t)
	if f.toSRGB != nil {
		img = convertColours(img, f.toSRGB)
	}
	reportAlpha(img, f.src, f.dst, f.p)
	if noAlphaTargets[f.dst.ID] && f.opts.Background != "" {
		r, g, b := f.opts.BackgroundRGB()
		img = flattenOnto(img, r, g, b)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.encode(ctx, out, img)
}

// convertColours converts an image's pixels to sRGB, in place where it is already 8-bit RGBA
// or NRGBA (the decoder's or resampler's own buffer).
func convertColours(img image.Image, t *icc.Transform) image.Image {
	img = To8Bit(img)
	switch m := img.(type) {
	case *image.RGBA:
		if !m.Opaque() {
			n := toNRGBA(m)
			t.Apply(n.Pix)
			return n
		}
		t.Apply(m.Pix)
		return m
	case *image.NRGBA:
		t.Apply(m.Pix)
		return m
	case *image.Paletted:
		n := palettedToNRGBA(m)
		t.Apply(n.Pix)
		return n
	}
	return img // gray: an RGB profile does not describe it
}

// encode writes img with the job's metadata choice, fitting max_bytes when set.
func (f *finisher) encode(ctx context.Context, out io.Writer, img image.Image) error {
	if f.opts.MaxBytes <= 0 {
		return f.encodeOnce(ctx, out, img, f.opts)
	}
	return f.encodeFit(ctx, out, img)
}

func (f *finisher) encodeOnce(ctx context.Context, out io.Writer, img image.Image, opts convert.Options) error {
	if f.dst.ID == "webp" && (f.metadataKept() || f.keepICC) {
		// The extended format's header goes first and names the chunks: rewrite the whole
		// (compressed, small) file.
		var buf bytes.Buffer
		if err := f.dst.Encode(ctx, &buf, img, opts); err != nil {
			return err
		}
		ex, xmp, prof := f.metaBlocks()
		b, err := webpWithMeta(buf.Bytes(), ex, xmp, prof)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	}
	w := out
	var mw *metaWriter
	if f.metadataKept() || f.keepICC {
		mw = f.metaWriter(out)
		w = mw
	}
	if err := f.dst.Encode(ctx, w, img, opts); err != nil {
		return err
	}
	if mw != nil {
		return mw.flush()
	}
	return nil
}

// errOverBudget stops an encode that has written more than max_bytes.
var errOverBudget = errors.New("output over max_bytes")

// capBuffer collects an encode's output up to max bytes.
type capBuffer struct {
	bytes.Buffer
	max int64
}

func (c *capBuffer) Write(p []byte) (int, error) {
	if int64(c.Len()+len(p)) > c.max {
		return 0, errOverBudget
	}
	return c.Buffer.Write(p)
}

// tooLarge is the job error when no allowed encode fits max_bytes.
func (f *finisher) tooLarge(detail string) error {
	return &convert.Error{Reason: convert.ReasonOutputTooLarge,
		Message: fmt.Sprintf("the %s output does not fit max_bytes %d %s; raise max_bytes or make the image smaller (width, height)", f.dst.Name, f.opts.MaxBytes, detail)}
}

// qualityTargets are the targets whose quality a max_bytes search lowers.
var qualityTargets = map[string]int{"jpeg": JPEGQuality, "webp": WebPQuality, "avif": AVIFQuality}

// encodeFit encodes within max_bytes: a lossless target once, a lossy one at the job's (or
// default) quality and, when that is too large, by binary search down to MaxBytesMinQuality,
// at most MaxBytesEncodes encodes, each stopped as soon as it passes max_bytes. The quality
// chosen and the encodes spent are reported as a quality_reduced warning.
func (f *finisher) encodeFit(ctx context.Context, out io.Writer, img image.Image) error {
	max := f.opts.MaxBytes
	try := func(q int) (*capBuffer, error) {
		o := f.opts
		if q > 0 {
			o.Quality = q
		}
		buf := &capBuffer{max: max}
		err := f.encodeOnce(ctx, buf, img, o)
		if errors.Is(err, errOverBudget) || ctx.Err() == nil && errors.Is(errors.Unwrap(err), errOverBudget) {
			return nil, nil
		}
		var ce *convert.Error
		if errors.As(err, &ce) && errors.Is(ce.Err, errOverBudget) {
			return nil, nil
		}
		return buf, err
	}
	def, lossy := qualityTargets[f.dst.ID]
	if !lossy || webpLossless(f.opts) {
		buf, err := try(0)
		if err != nil {
			return err
		}
		if buf == nil {
			return f.tooLarge(fmt.Sprintf("(%s is written without loss, so its size cannot be traded for quality)", f.dst.Name))
		}
		_, err = out.Write(buf.Bytes())
		return err
	}
	hi := def
	if f.opts.Quality != 0 {
		hi = f.opts.Quality
	}
	best, err := try(hi)
	if err != nil || best != nil {
		if err == nil {
			_, err = out.Write(best.Bytes())
		}
		return err
	}
	lo := min(MaxBytesMinQuality, hi)
	encodes := 1
	if lo == hi {
		return f.tooLarge(fmt.Sprintf("even at quality %d", lo))
	}
	best, err = try(lo)
	encodes++
	if err != nil {
		return err
	}
	if best == nil {
		return f.tooLarge(fmt.Sprintf("even at quality %d, the lowest allowed (%d encodes tried)", lo, encodes))
	}
	for hi-lo > 1 && encodes < MaxBytesEncodes {
		mid := (lo + hi) / 2
		buf, err := try(mid)
		encodes++
		if err != nil {
			return err
		}
		if buf != nil {
			best, lo = buf, mid
		} else {
			hi = mid
		}
	}
	f.p.Warn(convert.WarnQualityReduced, fmt.Sprintf("quality %d was used to fit max_bytes %d (%d bytes, %d encodes)", lo, max, best.Len(), encodes))
	_, err = out.Write(best.Bytes())
	return err
}

// metaWriter inserts the input's metadata into a JPEG or PNG encoder's output: after JPEG's
// SOI marker (APP1 EXIF, APP1 XMP, APP2 ICC_PROFILE segments) or after PNG's IHDR chunk
// (iCCP, eXIf, iTXt XML:com.adobe.xmp). The EXIF orientation is reset to 1 when the pixels were turned upright.
type metaWriter struct {
	w      io.Writer
	head   []byte // the output's first bytes, held until the insertion point is known
	insert []byte
	at     int // bytes of output before the insertion point
	done   bool
}

// metaBlocks returns what the output carries: EXIF (orientation reset to 1 when the pixels
// were turned upright), XMP, the ICC profile; nil for each that is not kept.
func (f *finisher) metaBlocks() (ex, xmp, prof []byte) {
	if f.metadataKept() {
		ex, xmp = f.meta.exif, f.meta.xmp
		if len(ex) > 0 && f.opts.Orient() {
			ex = exif.WithOrientation(ex, 1)
		}
	}
	if f.keepICC {
		prof = f.meta.icc
	}
	return ex, xmp, prof
}

func (f *finisher) metaWriter(w io.Writer) *metaWriter {
	ex, xmp, prof := f.metaBlocks()
	m := &metaWriter{w: w}
	switch f.dst.ID {
	case "jpeg":
		m.at = 2
		if len(ex) > 0 && len(ex)+8 <= 0xFFFF {
			m.insert = appendJPEGSegment(m.insert, 0xE1, []byte("Exif\x00\x00"), ex)
		}
		if len(xmp) > 0 && len(xmp)+31 <= 0xFFFF {
			m.insert = appendJPEGSegment(m.insert, 0xE1, []byte("http://ns.adobe.com/xap/1.0/\x00"), xmp)
		}
		const chunk = 0xFFFF - 2 - 14
		n := (len(prof) + chunk - 1) / chunk
		for i := 0; i < n && n < 256; i++ {
			part := prof[i*chunk : min(len(prof), (i+1)*chunk)]
			m.insert = appendJPEGSegment(m.insert, 0xE2, append([]byte("ICC_PROFILE\x00"), byte(i+1), byte(n)), part)
		}
	case "png":
		m.at = 8 + 25 // signature, IHDR
		if len(prof) > 0 {
			var z bytes.Buffer
			zw := zlib.NewWriter(&z)
			zw.Write(prof)
			zw.Close()
			m.insert = appendPNGChunk(m.insert, "iCCP", append([]byte("icc\x00\x00"), z.Bytes()...))
		}
		if len(ex) > 0 {
			m.insert = appendPNGChunk(m.insert, "eXIf", ex)
		}
		if len(xmp) > 0 {
			m.insert = appendPNGChunk(m.insert, "iTXt", append([]byte(pngXMPKey), xmp...))
		}
	}
	return m
}

// pngXMPKey begins the iTXt chunk that holds XMP (the XMP specification, part 3): the keyword,
// no compression, no language tag and no translated keyword.
const pngXMPKey = "XML:com.adobe.xmp\x00\x00\x00\x00\x00"

func appendJPEGSegment(b []byte, marker byte, id, data []byte) []byte {
	b = append(b, 0xFF, marker)
	b = binary.BigEndian.AppendUint16(b, uint16(2+len(id)+len(data)))
	b = append(b, id...)
	return append(b, data...)
}

func appendPNGChunk(b []byte, typ string, data []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	start := len(b)
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[start:]))
}

func (m *metaWriter) Write(p []byte) (int, error) {
	if m.done {
		return m.w.Write(p)
	}
	need := m.at - len(m.head)
	if len(p) < need {
		m.head = append(m.head, p...)
		return len(p), nil
	}
	m.head = append(m.head, p[:need]...)
	if err := m.flush(); err != nil {
		return 0, err
	}
	if _, err := m.w.Write(p[need:]); err != nil {
		return 0, err
	}
	return len(p), nil
}

// flush writes the held head and the metadata; after it the writer passes bytes through.
func (m *metaWriter) flush() error {
	if m.done {
		return nil
	}
	m.done = true
	if _, err := m.w.Write(m.head); err != nil {
		return err
	}
	if len(m.head) == m.at {
		if _, err := m.w.Write(m.insert); err != nil {
			return err
		}
	}
	return nil
}

// webpWithMeta rewrites a WebP file as the extended format with an ICCP chunk (prof), an EXIF
// chunk (ex) and an XMP chunk (xmp) added, any may be empty: a VP8X header is written or its
// flags updated, the image chunks are kept as they are, and earlier ICCP, EXIF and XMP chunks
// are replaced. The chunks go in the container specification's order: VP8X, ICCP, the image,
// EXIF, XMP.
func webpWithMeta(b, ex, xmp, prof []byte) ([]byte, error) {
	if len(b) < 20 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return nil, errors.New("webp: not a RIFF WEBP file")
	}
	type chunk struct {
		typ  string
		data []byte
	}
	var chunks []chunk
	for off := 12; off+8 <= len(b); {
		n := int(binary.LittleEndian.Uint32(b[off+4:]))
		if n < 0 || off+8+n > len(b) {
			return nil, errors.New("webp: chunk past the end")
		}
		chunks = append(chunks, chunk{string(b[off : off+4]), b[off+8 : off+8+n]})
		off += 8 + n + n&1
	}
	if len(chunks) == 0 {
		return nil, errors.New("webp: no chunks")
	}
	var vp8x []byte
	switch first := chunks[0]; first.typ {
	case "VP8X":
		if len(first.data) < 10 {
			return nil, errors.New("webp: short VP8X")
		}
		vp8x = append([]byte(nil), first.data[:10]...)
		chunks = chunks[1:]
	case "VP8 ":
		d := first.data
		if len(d) < 10 {
			return nil, errors.New("webp: short VP8 header")
		}
		w, h := int(binary.LittleEndian.Uint16(d[6:])&0x3fff), int(binary.LittleEndian.Uint16(d[8:])&0x3fff)
		vp8x = vp8xHeader(0, w, h)
	case "VP8L":
		d := first.data
		if len(d) < 5 || d[0] != 0x2f {
			return nil, errors.New("webp: short VP8L header")
		}
		bits := binary.LittleEndian.Uint32(d[1:])
		var flags byte
		if bits>>28&1 == 1 {
			flags |= 0x10 // alpha
		}
		vp8x = vp8xHeader(flags, int(bits&0x3fff)+1, int(bits>>14&0x3fff)+1)
	default:
		return nil, fmt.Errorf("webp: unexpected first chunk %q", first.typ)
	}
	vp8x[0] &^= 0x2c
	if len(prof) > 0 {
		vp8x[0] |= 0x20
	}
	if len(ex) > 0 {
		vp8x[0] |= 0x08
	}
	if len(xmp) > 0 {
		vp8x[0] |= 0x04
	}
	out := []chunk{{"VP8X", vp8x}}
	if len(prof) > 0 {
		out = append(out, chunk{"ICCP", prof})
	}
	for _, c := range chunks {
		if c.typ != "ICCP" && c.typ != "EXIF" && c.typ != "XMP " {
			out = append(out, c)
		}
	}
	if len(ex) > 0 {
		out = append(out, chunk{"EXIF", ex})
	}
	if len(xmp) > 0 {
		out = append(out, chunk{"XMP ", xmp})
	}
	res := []byte("RIFF\x00\x00\x00\x00WEBP")
	for _, c := range out {
		res = append(res, c.typ...)
		res = binary.LittleEndian.AppendUint32(res, uint32(len(c.data)))
		res = append(res, c.data...)
		if len(c.data)&1 == 1 {
			res = append(res, 0)
		}
	}
	binary.LittleEndian.PutUint32(res[4:], uint32(len(res)-8))
	return res, nil
}

// vp8xHeader is a VP8X chunk's payload: flags and the canvas size.
func vp8xHeader(flags byte, w, h int) []byte {
	p := make([]byte, 10)
	p[0] = flags
	p[4], p[5], p[6] = byte(w-1), byte((w-1)>>8), byte((w-1)>>16)
	p[7], p[8], p[9] = byte(h-1), byte((h-1)>>8), byte((h-1)>>16)
	return p
}
