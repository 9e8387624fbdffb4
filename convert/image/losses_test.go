package image

import (
	"context"
	"io"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// TestImage_Warnings: what an image conversion cannot keep is reported, exactly, and a
// conversion that keeps everything reports nothing. The metadata and APNG samples are made by
// testdata/images/make-metadata-samples.sh (Python's standard library and ffmpeg).
func TestImage_Warnings(t *testing.T) {
	c := testCatalog(convert.Limits{})
	const (
		metaJPEG = "the JPEG's EXIF metadata (camera, date, position, orientation...) was not written to the PNG"
		iccJPEG  = "the JPEG's embedded ICC colour profile was not written to the PNG; its colours are written as if they were sRGB"
	)
	tests := []struct {
		sample, from, to string
		want             []convert.Warning
	}{
		{"sample-exif-icc.jpeg", "jpeg", "png", []convert.Warning{
			warning(convert.WarnMetadataDropped, metaJPEG), warning(convert.WarnColorProfileDropped, iccJPEG)}},
		{"sample-meta.png", "png", "webp", []convert.Warning{
			warning(convert.WarnMetadataDropped, "the PNG's EXIF and text chunks metadata (camera, date, position, orientation...) was not written to the WebP"),
			warning(convert.WarnColorProfileDropped, "the PNG's embedded ICC colour profile was not written to the WebP; its colours are written as if they were sRGB")}},
		// The streaming PNG -> JPEG path and the general one report transparency alike.
		{"sample-alpha.png", "png", "jpeg", []convert.Warning{
			warning(convert.WarnAlphaDropped, "the PNG has transparent pixels; JPEG has no transparency, so they were composited over white")}},
		{"sample-alpha.webp", "webp", "ppm", []convert.Warning{
			warning(convert.WarnAlphaDropped, "the WebP has transparent pixels; Netpbm has no transparency, so they were composited over white")}},
		{"sample-anim.gif", "gif", "png", []convert.Warning{
			warning(convert.WarnAnimationDropped, "the GIF is an animation of 4 frames; PNG holds one image, so only the first frame was converted")}},
		{"sample-anim-apng.png", "png", "jpeg", []convert.Warning{
			warning(convert.WarnAnimationDropped, "the PNG is an animation of 4 frames; JPEG holds one image, so only the first frame was converted")}},
		// GIF holds animations, but APNG's are not read.
		{"sample-anim-apng.png", "png", "gif", []convert.Warning{
			warning(convert.WarnAnimationDropped, "the PNG is an animation of 4 frames (APNG); its animation is not read, so only the first frame was converted")}},
		{"sample-16bit.png", "png", "jpeg", []convert.Warning{
			warning(convert.WarnBitDepthReduced, "the PNG has 16 bits per channel; JPEG holds 8, so the samples were reduced to 8 bits")}},
		{"sample-pages.tiff", "tiff", "png", []convert.Warning{
			warning(convert.WarnPagesDropped, "the TIFF holds 2 pages (images); only the first was converted")}},
		{"sample-sizes.ico", "ico", "png", []convert.Warning{
			warning(convert.WarnImagesDropped, "the icon holds 2 images (sizes); only the largest was converted")}},
		{"sample-wide.png", "png", "ico", []convert.Warning{
			warning(convert.WarnImageResized, "the 300x20 image was shrunk to fit 256x256, the largest ICO holds")}},
		{"sample.png", "png", "ico", nil}, // 64x48 fits
		// Kept: nothing to say.
		{"sample-16bit.png", "png", "tiff", nil},
		{"sample-alpha.png", "png", "webp", nil},
		{"sample-anim.gif", "gif", "webp", nil},
		{"sample.png", "png", "jpeg", nil},
		{"sample.jpeg", "jpeg", "png", nil},
		{"sample.tiff", "tiff", "png", nil},
	}
	for _, tt := range tests {
		ws, err := c.Convert(context.Background(), tt.from, tt.to, convert.Options{}, openFile(t, filepath.Join("../../testdata/images", tt.sample)), io.Discard, t.TempDir())
		if err != nil {
			t.Fatalf("%s -> %s: %v", tt.sample, tt.to, err)
		}
		if !reflect.DeepEqual(ws, tt.want) {
			t.Errorf("%s -> %s: warnings\n%+v\nwant\n%+v", tt.sample, tt.to, ws, tt.want)
		}
	}
}

// warning is a convert.Warning literal.
func warning(code, message string) convert.Warning {
	return convert.Warning{Code: code, Message: message}
}
