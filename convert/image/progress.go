package image

import (
	"context"
	"sync/atomic"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/rowcount"
)

// imageProgress turns an image conversion's two phases into its job's progress
// (convert.Params.Progress; the image converters are marked Counts). The decode phase counts
// the input's bytes its decoders have read (every pixel read goes through an inputReader),
// the encode phase the output's rows its encoder has written (pngenc's bands, tiffenc's and
// jpegstrip's strips, GIF's dithered rows, AVIF's grid bands: rowcount). Each phase covers
// its share of the whole, the codecs' measured CPU per pixel (phaseShares), so a 12 MP PNG to
// AVIF no longer sits at 0.99 from the end of its decode. Reports only grow (Params.Progress
// keeps the highest), so a max_bytes search's second encode does not take them back.
type imageProgress struct {
	p    convert.Params
	size int64 // the input's bytes
	rows int64 // the output's rows, every frame's
	// readSpan is the share of the progress reading the whole input covers; the rows cover
	// [rowBase, rowBase+rowSpan).
	readSpan, rowBase, rowSpan float64
	read                       atomic.Int64
}

// newImageProgress plans the progress of converting an input of size bytes, decoded with
// src, to rows output rows encoded with dst: srcPx pixels decoded, dstPx encoded.
func newImageProgress(p convert.Params, size, rows int64, src, dst *Codec, srcPx, dstPx int64) *imageProgress {
	read := phaseShares(src, dst, srcPx, dstPx)
	return &imageProgress{p: p, size: size, rows: rows, readSpan: read, rowBase: read, rowSpan: 1 - read}
}

// streaming is t for a conversion that decodes and encodes a strip at a time: reading the
// input and writing the rows each cover the whole, whichever is further on counting.
func (t *imageProgress) streaming() *imageProgress {
	return &imageProgress{p: t.p, size: t.size, rows: t.rows, readSpan: 1, rowBase: 0, rowSpan: 1}
}

type imageProgressKey struct{}

// attach returns ctx carrying t: the inputReaders made under it count their bytes into t,
// and the encoders' rows (rowcount) reach it.
func (t *imageProgress) attach(ctx context.Context) context.Context {
	ctx = context.WithValue(ctx, imageProgressKey{}, t)
	return rowcount.With(ctx, t.rowsWritten)
}

// progressFrom is the imageProgress attached to ctx, or nil.
func progressFrom(ctx context.Context) *imageProgress {
	t, _ := ctx.Value(imageProgressKey{}).(*imageProgress)
	return t
}

// bytesRead counts n more bytes of the input read by a decoder.
func (t *imageProgress) bytesRead(n int) {
	if t == nil || n <= 0 || t.size <= 0 {
		return
	}
	t.report(t.readSpan * min(float64(t.read.Add(int64(n)))/float64(t.size), 1))
}

// rowsWritten takes the encoders' running count of rows written.
func (t *imageProgress) rowsWritten(n int64) {
	if t.rows <= 0 {
		return
	}
	t.report(t.rowBase + t.rowSpan*min(float64(n)/float64(t.rows), 1))
}

func (t *imageProgress) report(frac float64) { t.p.ProgressFraction(frac) }

// Nanoseconds of CPU a pixel costs each codec's decoder and encoder: the phases' weights
// (phaseShares). Measured by TestImageProgress_PhaseCPU (go test -run PhaseCPU -v with
// CONVSVC_MEASURE=1) on a 2000x1500 photo-like image, each codec's decode of its own
// encode and its encode of the decoded pixels, one core; docs/decisions.md has the figures.
// JPEG XL (read only) and ICO (at most 256x256) are not measured.
var (
	decodeNsPerPixel = map[string]float64{
		"png": 11, "jpeg": 20, "gif": 11, "bmp": 2, "tiff": 48, "webp": 47, "avif": 93, "qoi": 21, "ppm": 11,
	}
	encodeNsPerPixel = map[string]float64{
		"png": 26, "jpeg": 9, "gif": 100, "bmp": 7, "tiff": 20, "webp": 128, "avif": 341, "qoi": 34, "ppm": 9,
	}
)

// phaseShares is the share of a conversion's CPU its decode takes: src's decode of srcPx
// pixels against dst's encode of dstPx (resampling between them is not counted: it moves
// nothing). A codec not measured counts as 10 ns a pixel.
func phaseShares(src, dst *Codec, srcPx, dstPx int64) float64 {
	dec, enc := nsPerPixel(decodeNsPerPixel, src.ID), nsPerPixel(encodeNsPerPixel, dst.ID)
	d, e := dec*float64(srcPx), enc*float64(dstPx)
	if d+e <= 0 {
		return 0.5
	}
	return d / (d + e)
}

func nsPerPixel(m map[string]float64, id string) float64 {
	if v, ok := m[id]; ok {
		return v
	}
	return 10
}
