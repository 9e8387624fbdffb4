package convert

import (
	"context"
	"fmt"
	"image"

	"golang.org/x/image/draw"
)

// resize scales img to the box the options ask for; without width or height it returns img.
// One of width and height alone keeps the aspect ratio. The result is checked against the
// pixel limit before it is allocated.
func resize(ctx context.Context, img image.Image, o Options, lim Limits) (image.Image, error) {
	if o.Width == 0 && o.Height == 0 {
		return img, nil
	}
	b := img.Bounds()
	sw, sh := b.Dx(), b.Dy()
	if sw == 0 || sh == 0 {
		return img, nil
	}
	dw, dh := o.Width, o.Height
	src := b
	switch {
	case dh == 0:
		dh = max(1, int(int64(sh)*int64(dw)/int64(sw)))
	case dw == 0:
		dw = max(1, int(int64(sw)*int64(dh)/int64(sh)))
	case o.Fit == FitFill:
	case o.Fit == FitCover:
		// Crop the source to the box's aspect ratio, centred.
		if int64(sw)*int64(dh) > int64(sh)*int64(dw) {
			cw := int(int64(sh) * int64(dw) / int64(dh))
			src = image.Rect(b.Min.X+(sw-cw)/2, b.Min.Y, b.Min.X+(sw-cw)/2+cw, b.Max.Y)
		} else {
			ch := int(int64(sw) * int64(dh) / int64(dw))
			src = image.Rect(b.Min.X, b.Min.Y+(sh-ch)/2, b.Max.X, b.Min.Y+(sh-ch)/2+ch)
		}
	default: // contain
		if int64(sw)*int64(dh) > int64(sh)*int64(dw) {
			dh = max(1, int(int64(sh)*int64(dw)/int64(sw)))
		} else {
			dw = max(1, int(int64(sw)*int64(dh)/int64(sh)))
		}
	}
	if err := checkPixels(dw, dh, lim); err != nil {
		return nil, err
	}
	if dw == sw && dh == sh && src == b {
		return img, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dst := image.NewNRGBA(image.Rect(0, 0, dw, dh))
	scaler := draw.CatmullRom
	if int64(dw)*int64(dh) > int64(sw)*int64(sh) {
		scaler = draw.BiLinear // enlarging: CatmullRom's sharpening buys nothing
	}
	scaler.Scale(dst, dst.Bounds(), img, src, draw.Src, nil)
	if dst.Bounds().Empty() {
		return nil, fmt.Errorf("resize to %dx%d produced nothing", dw, dh)
	}
	return dst, nil
}
