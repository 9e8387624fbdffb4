package image

import (
	"context"
	"fmt"
	"image"
	"io"

	"github.com/convsvc/convsvc/convert"
)

// ppmStripDecoder reads the raster of a binary PGM (P5) or PPM (P6) with maxval 255 a strip
// at a time, into the layouts decodeNetpbm gives the whole image: *image.Gray for PGM,
// opaque *image.RGBA for PPM. Other Netpbm files are left to decodeNetpbm (newPPMStripDecoder
// returns ok false).
type ppmStripDecoder struct {
	r             io.Reader // positioned at the raster
	width, height int
	depth         int // 1 gray, 3 RGB
	y             int // the next row to read
	row           []byte
}

// newPPMStripDecoder reads the header from r and positions r at the raster. ok is false for
// a file the strip decoder does not read (plain formats, PBM, PAM, maxval other than 255).
func newPPMStripDecoder(r *inputReader) (d *ppmStripDecoder, ok bool, err error) {
	h, err := readPNMHeader(r)
	if err != nil {
		return nil, false, err
	}
	if (h.format != '5' && h.format != '6') || h.maxval != 255 {
		return nil, false, nil
	}
	if need := h.dataOff + h.rasterBytes(); need > r.Size() {
		return nil, false, fmt.Errorf("netpbm: %dx%d pixels need %d bytes, the file has %d: %w", h.width, h.height, need, r.Size(), io.ErrUnexpectedEOF)
	}
	if _, err := r.Seek(h.dataOff, io.SeekStart); err != nil {
		return nil, false, err
	}
	return &ppmStripDecoder{r: r, width: h.width, height: h.height, depth: h.depth}, true, nil
}

// Bounds is the image's bounds, with origin 0,0.
func (d *ppmStripDecoder) Bounds() image.Rectangle { return image.Rect(0, 0, d.width, d.height) }

// BytesPerPixel is 1 for PGM (*image.Gray), 4 for PPM (*image.RGBA).
func (d *ppmStripDecoder) BytesPerPixel() int {
	if d.depth == 1 {
		return 1
	}
	return 4
}

// StripImage returns a Gray or RGBA image of bounds r over pix, with a stride of
// BytesPerPixel()*width.
func (d *ppmStripDecoder) StripImage(pix []byte, r image.Rectangle) image.Image {
	stride := d.BytesPerPixel() * d.width
	pix = pix[:stride*r.Dy()]
	if d.depth == 1 {
		return &image.Gray{Pix: pix, Stride: stride, Rect: r}
	}
	return &image.RGBA{Pix: pix, Stride: stride, Rect: r}
}

// ReadRows reads the next rows into m, an image StripImage made whose bounds start at the
// first row not yet read.
func (d *ppmStripDecoder) ReadRows(m image.Image) error {
	r := m.Bounds()
	var pix []byte
	var stride int
	switch m := m.(type) {
	case *image.Gray:
		if d.depth == 1 {
			pix, stride = m.Pix, m.Stride
		}
	case *image.RGBA:
		if d.depth == 3 {
			pix, stride = m.Pix, m.Stride
		}
	}
	rowLen := d.BytesPerPixel() * d.width
	if pix == nil || r.Min.X != 0 || r.Max.X != d.width || r.Min.Y != d.y || r.Max.Y > d.height || stride < rowLen || len(pix) < stride*(r.Dy()-1)+rowLen {
		return fmt.Errorf("netpbm: ReadRows into %T %v, want rows from %d of a %dx%d image", m, r, d.y, d.width, d.height)
	}
	if d.depth == 3 && d.row == nil {
		d.row = make([]byte, 3*d.width)
	}
	for i := range r.Dy() {
		dst := pix[i*stride : i*stride+rowLen]
		if d.depth == 1 {
			if _, err := io.ReadFull(d.r, dst); err != nil {
				return eofTruncated(err)
			}
			continue
		}
		if _, err := io.ReadFull(d.r, d.row); err != nil {
			return eofTruncated(err)
		}
		src := d.row
		for x := 0; x < d.width; x++ {
			dst[4*x], dst[4*x+1], dst[4*x+2], dst[4*x+3] = src[3*x], src[3*x+1], src[3*x+2], 0xff
		}
	}
	d.y = r.Max.Y
	return nil
}

// eofTruncated reports the end of the input inside the raster as truncation.
func eofTruncated(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Finish checks every row was read; what follows the raster is ignored, as decodeNetpbm
// ignores it.
func (d *ppmStripDecoder) Finish() error {
	if d.y != d.height {
		return fmt.Errorf("netpbm: Finish after %d of %d rows", d.y, d.height)
	}
	return nil
}

// ppmToJPEG converts a binary 8-bit PGM or PPM to a JPEG a strip at a time, as pngToJPEG
// does a PNG: the same bytes as decodeNetpbm followed by encodeJPEG, with nothing the size of
// the image held. handled is false, with nothing written, for the Netpbm files
// ppmStripDecoder leaves to decodeNetpbm.
func ppmToJPEG(ctx context.Context, in *io.SectionReader, out io.Writer, codec *Codec, cfg image.Config, opts convert.Options) (handled bool, err error) {
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	src := newInputReader(dctx, in)
	var d *ppmStripDecoder
	var ok bool
	err = GuardCodec(codec.Name+" decoder", func() (err error) {
		d, ok, err = newPPMStripDecoder(src)
		return err
	})
	if err != nil {
		return true, decodeError(ctx, codec, src, err)
	}
	if !ok {
		return false, nil
	}
	return stripsToJPEG(ctx, dctx, stop, src, d, out, codec, cfg, opts, true, nil)
}

// ppmStreams says whether in is a Netpbm file ppmStripDecoder reads (binary PGM or PPM,
// maxval 255), from its header alone.
func ppmStreams(in *io.SectionReader) bool {
	h, err := readPNMHeader(in)
	return err == nil && (h.format == '5' || h.format == '6') && h.maxval == 255
}
