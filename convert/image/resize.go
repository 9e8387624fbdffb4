package image

import (
	"context"
	"fmt"
	"image"

	"golang.org/x/image/draw"

	"github.com/convsvc/convsvc/convert"
)

// ResizeBox works out what resize does to an image of sw x sh pixels: the output size and the
// part of the source it is scaled from. One of width and height alone keeps the aspect ratio;
// both follow o.Fit (contain by default). Without width or height the image is unchanged.
func ResizeBox(sw, sh int, o convert.Options) (dw, dh int, src image.Rectangle) {
	src = image.Rect(0, 0, sw, sh)
	if (o.Width == 0 && o.Height == 0) || sw <= 0 || sh <= 0 {
		return sw, sh, src
	}
	dw, dh = o.Width, o.Height
	switch {
	case dh == 0:
		dh = max(1, int(int64(sh)*int64(dw)/int64(sw)))
	case dw == 0:
		dw = max(1, int(int64(sw)*int64(dh)/int64(sh)))
	case o.Fit == convert.FitFill:
	case o.Fit == convert.FitCover:
		// Crop the source to the box's aspect ratio, centred.
		if int64(sw)*int64(dh) > int64(sh)*int64(dw) {
			cw := int(int64(sh) * int64(dw) / int64(dh))
			src = image.Rect((sw-cw)/2, 0, (sw-cw)/2+cw, sh)
		} else {
			ch := int(int64(sw) * int64(dh) / int64(dw))
			src = image.Rect(0, (sh-ch)/2, sw, (sh-ch)/2+ch)
		}
	default: // contain
		if int64(sw)*int64(dh) > int64(sh)*int64(dw) {
			dh = max(1, int(int64(sh)*int64(dw)/int64(sw)))
		} else {
			dw = max(1, int(int64(sw)*int64(dh)/int64(sh)))
		}
	}
	return dw, dh, src
}

// Resize scales img to the box the options ask for; without width or height it returns img.
// The result is checked against the pixel limit before it is allocated.
func Resize(ctx context.Context, img image.Image, o convert.Options, lim convert.Limits) (image.Image, error) {
	b := img.Bounds()
	sw, sh := b.Dx(), b.Dy()
	dw, dh, src := ResizeBox(sw, sh, o)
	if dw == sw && dh == sh && src == image.Rect(0, 0, sw, sh) {
		return img, nil
	}
	return scaleTo(ctx, img, dw, dh, src, lim)
}

// scaleTo resamples the src part of img (relative to its bounds' origin) to dw x dh.
func scaleTo(ctx context.Context, img image.Image, dw, dh int, src image.Rectangle, lim convert.Limits) (image.Image, error) {
	b := img.Bounds()
	sw, sh := b.Dx(), b.Dy()
	if err := CheckPixels(dw, dh, lim); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dst := image.NewNRGBA(image.Rect(0, 0, dw, dh))
	scaler := draw.CatmullRom
	if int64(dw)*int64(dh) > int64(sw)*int64(sh) {
		scaler = draw.BiLinear // enlarging: CatmullRom's sharpening buys nothing
	}
	scaler.Scale(dst, dst.Bounds(), img, src.Add(b.Min), draw.Src, nil)
	if dst.Bounds().Empty() {
		return nil, fmt.Errorf("resize to %dx%d produced nothing", dw, dh)
	}
	return dst, nil
}
