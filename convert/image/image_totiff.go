package image

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"os"
	"runtime"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/pngstream"
	"github.com/convsvc/convsvc/convert/internal/tiffenc"
)

// tiffStreamRows is how many rows toTIFF decodes at a time: one photo strip of tiffenc's.
const tiffStreamRows = 64

// streamToTIFF is streamConvert for TIFF targets: an opaque 8-bit PNG (gray or RGB) or a
// binary 8-bit PGM or PPM converted to a TIFF of the same size without the decoded image,
// under streamTIFFCost of the budget. handled is false, with the budget share returned and
// nothing written, when the conversion does not stream this way (another source, a resize or
// crop, a small image, alpha or a palette, a layout the strip decoders leave to the
// whole-image decoders): the caller then converts the whole image. The compressed strips,
// past tiffenc.SpillThreshold, wait for the IFD in a temporary file in scratchDir ("" for
// os.TempDir(), created if missing), removed before it returns.
func streamToTIFF(ctx context.Context, c *convert.Catalog, in *io.SectionReader, out io.Writer, src, dst *Codec, cfg image.Config, opts convert.Options, scratchDir string, losses func()) (handled bool, err error) {
	if src.ID != "png" && src.ID != "ppm" {
		return false, nil
	}
	if w, h, box := ResizeBox(cfg.Width, cfg.Height, opts); w != cfg.Width || h != cfg.Height || box != image.Rect(0, 0, w, h) {
		return false, nil
	}
	if int64(cfg.Width)*int64(cfg.Height) < tiffStreamMinPixels {
		return false, nil
	}
	// Only images without alpha: whether the whole image is opaque (and so stored as RGB)
	// is known only at its last row, and a palette is not tiffenc's.
	// (A binary 8-bit PPM says NRGBA but is opaque; a PNG's tRNS is checked by toTIFF.)
	gray := cfg.ColorModel == color.GrayModel
	if src.ID == "png" && !gray && cfg.ColorModel != color.RGBAModel {
		return false, nil
	}
	if src.ID == "ppm" && !ppmStreams(in) {
		return false, nil
	}
	b := image.Rect(0, 0, cfg.Width, cfg.Height)
	est := BaseConversionMemory + streamTIFFCost(b, gray)
	what := fmt.Sprintf("converting this %dx%d %s to %s", cfg.Width, cfg.Height, src.Name, dst.Name)
	if err := c.AcquireMemory(ctx, est, what); err != nil {
		return true, err
	}
	defer c.ReleaseMemory(est)

	// Encode's choice of options, as encodeTIFF's; the workers only change the speed.
	o := &tiffenc.Options{Workers: tiffStreamWorkers()}
	for pass := 0; ; pass++ {
		handled, err := toTIFF(ctx, in, out, src, cfg, o, scratchDir, func() {
			if pass == 0 && losses != nil {
				losses()
			}
		})
		if errors.Is(err, tiffenc.ErrFlat) && pass == 0 {
			// Graphics, which Encode compresses with other options: the rows once more.
			flat := tiffenc.ChosenOptions(true)
			flat.Workers = o.Workers
			o = &flat
			continue
		}
		return handled, err
	}
}

// tiffStreamWorkers is how many strips streamToTIFF compresses at once: up to 4, which
// outpace the one decoding goroutine at deflate's BestSpeed, so that the raw strips and
// deflate states the budget charges do not grow with the number of cores.
func tiffStreamWorkers() int { return min(runtime.GOMAXPROCS(0), 4) }

// tiffStreamMinPixels is the smallest image streamToTIFF streams; smaller ones go the
// whole-image way, whose memory is small anyway.
const tiffStreamMinPixels = 256 * 256

// toTIFF decodes the rows of in a strip at a time into a tiffenc.StripEncoder writing to out
// with the options o, spilling its compressed strips to a file in scratchDir (tiffSpill).
// started is called once the decoder took the file, before any row. It returns
// tiffenc.ErrFlat, with nothing written, as the StripEncoder does.
func toTIFF(ctx context.Context, in *io.SectionReader, out io.Writer, codec *Codec, cfg image.Config, o *tiffenc.Options, scratchDir string, started func()) (handled bool, err error) {
	src := newInputReader(ctx, in)
	var d stripDecoder
	ok := false
	err = GuardCodec(codec.Name+" decoder", func() (err error) {
		if codec.ID == "ppm" {
			var p *ppmStripDecoder
			p, ok, err = newPPMStripDecoder(src)
			d = p
			return err
		}
		var p *pngstream.Decoder
		p, ok, err = pngstream.NewStripDecoder(src)
		ok = ok && p.Opaque()
		d = p
		return err
	})
	if err != nil {
		return true, decodeError(ctx, codec, src, err)
	}
	if !ok {
		return false, nil
	}
	b := d.Bounds()
	if b.Dx() != cfg.Width || b.Dy() != cfg.Height {
		return true, convert.Errorf(fmt.Errorf("header says %dx%d, the decoder found %dx%d", cfg.Width, cfg.Height, b.Dx(), b.Dy()),
			"input is not a valid %s file (its size is inconsistent)", codec.Name)
	}
	model := color.Model(color.RGBAModel)
	if _, gray := d.StripImage(nil, image.Rectangle{}).(*image.Gray); gray {
		model = color.GrayModel
	}
	started()
	e, err := tiffenc.NewStripEncoder(ctx, &convert.ContextWriter{Ctx: ctx, W: out}, b.Dx(), b.Dy(), model, true, o)
	if err != nil {
		return true, err
	}
	// The deferred calls run bottom up: Abort ends the workers, which create and write the
	// spill, before its error is read and the file removed.
	spill := &tiffSpill{dir: scratchDir}
	defer spill.remove()
	defer func() { err = spill.explain(err) }()
	defer e.Abort()
	e.Spill(tiffSpillThreshold, spill.create)
	buf := make([]byte, d.BytesPerPixel()*b.Dx()*tiffStreamRows)
	for y := 0; y < b.Dy(); y += tiffStreamRows {
		if err := ctx.Err(); err != nil {
			return true, err
		}
		m := d.StripImage(buf, image.Rect(0, y, b.Dx(), min(y+tiffStreamRows, b.Dy())))
		if err := GuardCodec(codec.Name+" decoder", func() error { return d.ReadRows(m) }); err != nil {
			return true, decodeError(ctx, codec, src, err)
		}
		if err := e.WriteRows(m); err != nil {
			return true, err
		}
	}
	// The checksums and the chunks after the image data: only then is the file sound.
	if err := GuardCodec(codec.Name+" decoder", d.Finish); err != nil {
		return true, decodeError(ctx, codec, src, err)
	}
	return true, e.Close()
}

// tiffSpillThreshold is the compressed strips toTIFF holds in memory before it spills them;
// a variable for the tests.
var tiffSpillThreshold int64 = tiffenc.SpillThreshold

// tiffSpill is the temporary file in a scratch directory where toTIFF's StripEncoder spills
// its compressed strips; it remembers its first error to name it in the conversion's.
type tiffSpill struct {
	dir string
	f   *os.File
	err error // the first creation, write or read error
}

// create makes the file in dir, and dir if missing, for StripEncoder.Spill.
func (s *tiffSpill) create() (io.ReadWriteSeeker, error) {
	f, err := os.CreateTemp(s.dir, "tiff-strips-*")
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(s.dir, 0o700); err == nil {
			f, err = os.CreateTemp(s.dir, "tiff-strips-*")
		}
	}
	if err != nil {
		s.err = err
		return nil, err
	}
	s.f = f
	return s, nil
}

func (s *tiffSpill) Write(p []byte) (int, error) {
	n, err := s.f.Write(p)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}

func (s *tiffSpill) Read(p []byte) (int, error) {
	n, err := s.f.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

func (s *tiffSpill) Seek(off int64, whence int) (int64, error) { return s.f.Seek(off, whence) }

// remove closes and removes the file, if it was made.
func (s *tiffSpill) remove() {
	if s.f != nil {
		s.f.Close()
		os.Remove(s.f.Name())
		s.f = nil
	}
}

// explain turns err, when the spill failed, into the error that says so.
func (s *tiffSpill) explain(err error) error {
	if err == nil || s.err == nil {
		return err
	}
	return convert.Errorf(err, "could not write a temporary file in the scratch directory")
}

// streamTIFFCost is what streamToTIFF holds for an image of b, in bytes: the compressed
// strips until the IFD can be written (the output's io.Writer cannot seek back to the
// header), charged at the samples' size, deflate's worst case: all of them, or when that is
// more, tiffenc.SpillThreshold of them (the rest go to the scratch file) and twice
// tiffenc's Workers+2 strips, done out of order or spare, and the spill's copy buffer; the decoder's strip; for each
// of the tiffStreamWorkers workers (and 2 more) a strip of the largest rows tiffenc uses (256
// for graphics), its compressed copy and its deflate state; and the inflater's window and
// buffers.
func streamTIFFCost(b image.Rectangle, gray bool) int64 {
	spp, bpp := int64(3), int64(4)
	if gray {
		spp, bpp = 1, 1
	}
	w, h := int64(b.Dx()), int64(b.Dy())
	samples := w * h * spp
	held := samples + samples/256 + (h/16+1)*64 // stored blocks' and zlib's few bytes per strip
	workers := int64(tiffStreamWorkers())
	strip := w * spp * 256
	if spilled := tiffenc.SpillThreshold + 2*(workers+2)*(strip+strip/256+64) + 64<<10; spilled < held {
		held = spilled
	}
	return held + w*bpp*tiffStreamRows + (workers+2)*strip + workers*(strip+1<<20) + 1<<20
}
