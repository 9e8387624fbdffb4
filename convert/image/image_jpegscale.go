package image

import (
	"context"
	"fmt"
	"image"
	"io"

	"golang.org/x/image/draw"
	"golang.org/x/image/math/f64"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/jpegscale"
)

// jpegShrink is the DCT scale denominator (8, 4, 2, or 1 for none) a JPEG resize decodes at:
// the largest whose decode still covers the output in both dimensions, counting the part of
// the source the fit mode keeps (box), so the resampler after it only ever shrinks. A resize
// to more than half the source decodes at full size. Box and sizes are in the stored
// orientation: an EXIF turn is applied to the resized output (planGeometry).
func jpegShrink(box image.Rectangle, dw, dh int) int {
	for _, d := range []int{8, 4, 2} {
		if box.Dx()/d >= dw && box.Dy()/d >= dh {
			return d
		}
	}
	return 1
}

// jpegShrinkPlan is what imageRun needs to decode a JPEG at 1/denom: the pixels the scaled
// decode holds, and the extra bytes to charge: a progressive file's coefficients (all of them,
// whatever the scale) and the resampler's intermediate buffer.
type jpegShrinkPlan struct {
	denom     int
	decodedPx int64
	extra     int64
}

// planJPEGShrink decides on shrink-on-load for a JPEG resized to dw x dh from box; denom 1
// means decode at full size. The header has been checked against the pixel limit already.
func planJPEGShrink(in *io.SectionReader, cfg image.Config, box image.Rectangle, dw, dh int) jpegShrinkPlan {
	d := jpegShrink(box, dw, dh)
	if d == 1 {
		return jpegShrinkPlan{denom: 1, decodedPx: int64(cfg.Width) * int64(cfg.Height)}
	}
	var info jpegscale.Info
	err := GuardCodec("JPEG header reader", func() (err error) {
		info, err = jpegscale.DecodeInfo(io.NewSectionReader(in, 0, in.Size()))
		return err
	})
	if err != nil || info.Width != cfg.Width || info.Height != cfg.Height {
		return jpegShrinkPlan{denom: 1, decodedPx: int64(cfg.Width) * int64(cfg.Height)}
	}
	w, h := jpegscale.ScaledSize(cfg.Width, cfg.Height, d)
	// x/image/draw's Scale keeps a float64 RGBA copy of the decoded width at the output's
	// height between its two passes (32 bytes a pixel).
	return jpegShrinkPlan{denom: d, decodedPx: int64(w) * int64(h), extra: info.CoefficientBytes + int64(w)*int64(dh)*32}
}

// decodeJPEGScaled decodes a JPEG at 1/denom of its size (jpegscale), with DecodePixels'
// guards: a panic is an error, and the size must be the header's, scaled.
func decodeJPEGScaled(ctx context.Context, in *io.SectionReader, codec *Codec, cfg image.Config, denom int) (image.Image, error) {
	src := newInputReader(ctx, in)
	var img image.Image
	err := GuardCodec(codec.Name+" decoder", func() (err error) {
		img, err = jpegscale.DecodeScaled(src, denom)
		return err
	})
	if err != nil {
		return nil, decodeError(ctx, codec, src, err)
	}
	w, h := jpegscale.ScaledSize(cfg.Width, cfg.Height, denom)
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		return nil, convert.Errorf(fmt.Errorf("header says %dx%d, decoded %dx%d at 1/%d", cfg.Width, cfg.Height, b.Dx(), b.Dy(), denom),
			"input is not a valid %s file (its size is inconsistent)", codec.Name)
	}
	return img, nil
}

// resizeShrunk resamples an image decoded at 1/denom to the dw x dh output that ResizeBox
// gave for the full-size source, from box (in full-size coordinates) divided by denom. The
// mapping is exact (an affine transform): the decoded image's last row and column stand for
// fewer than denom source pixels when the size is not a multiple of denom, and rounding the
// box to whole decoded pixels would stretch the output by up to one of them.
func resizeShrunk(ctx context.Context, img image.Image, denom, dw, dh int, box image.Rectangle, lim convert.Limits) (image.Image, error) {
	if err := CheckPixels(dw, dh, lim); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b := img.Bounds()
	// JPEG pixels are opaque, so RGBA holds what NRGBA would, and x/image/draw has fast paths
	// from *image.YCbCr and *image.Gray to it (to NRGBA it goes pixel by pixel through
	// RGBA64At: 28% of a 12 MP -> 800 px conversion's CPU).
	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	if box.Min.X%denom == 0 && box.Min.Y%denom == 0 && box.Max.X%denom == 0 && box.Max.Y%denom == 0 {
		// Whole decoded pixels: the separable Scale, about twice as fast as Transform.
		sr := image.Rect(box.Min.X/denom, box.Min.Y/denom, box.Max.X/denom, box.Max.Y/denom)
		draw.CatmullRom.Scale(dst, dst.Bounds(), img, sr.Add(b.Min), draw.Src, nil)
		return dst, nil
	}
	d := float64(denom)
	sx, sy := float64(dw)*d/float64(box.Dx()), float64(dh)*d/float64(box.Dy())
	s2d := f64.Aff3{
		sx, 0, -(float64(b.Min.X) + float64(box.Min.X)/d) * sx,
		0, sy, -(float64(b.Min.Y) + float64(box.Min.Y)/d) * sy,
	}
	draw.CatmullRom.Transform(dst, s2d, img, b, draw.Src, nil)
	return dst, nil
}
