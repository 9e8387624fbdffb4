package image

import (
	"github.com/convsvc/convsvc/convert"
)

// Options accepted by raster targets: resizing everywhere, quality where the encoder is lossy,
// lossless where the format has both modes, page and dpi for rendering PDF and SVG inputs
// (Options.ValidateInput refuses them for other inputs).
// Every raster target also takes the transforms (rotate, flip, crop, background,
// auto_orient, strip_metadata, max_bytes); Options.ValidateSource keeps the ones that need
// an image input to image inputs.
var (
	transformOptions   = []string{convert.OptRotate, convert.OptFlip, convert.OptCrop, convert.OptBackground, convert.OptAutoOrient, convert.OptStripMetadata, convert.OptMaxBytes}
	rasterOptions      = append([]string{convert.OptWidth, convert.OptHeight, convert.OptFit, convert.OptPage, convert.OptPages, convert.OptDPI}, transformOptions...)
	lossyRasterOptions = append([]string{convert.OptQuality, convert.OptWidth, convert.OptHeight, convert.OptFit, convert.OptPage, convert.OptPages, convert.OptDPI}, transformOptions...)
	webpOptions        = append([]string{convert.OptQuality, convert.OptLossless, convert.OptWidth, convert.OptHeight, convert.OptFit, convert.OptPage, convert.OptPages, convert.OptDPI}, transformOptions...)
)

// imageFormats lists every image format the family recognizes, convertible or not yet.
var imageFormats = []convert.Format{
	{ID: "png", Name: "PNG image", Category: convert.CategoryImage, Extensions: []string{"png"}, MIME: "image/png", Options: rasterOptions},
	{ID: "jpeg", Name: "JPEG image", Category: convert.CategoryImage, Extensions: []string{"jpg", "jpeg", "jpe"}, MIME: "image/jpeg", Options: lossyRasterOptions},
	{ID: "gif", Name: "GIF image", Category: convert.CategoryImage, Extensions: []string{"gif"}, MIME: "image/gif", Options: rasterOptions},
	{ID: "bmp", Name: "BMP image", Category: convert.CategoryImage, Extensions: []string{"bmp"}, MIME: "image/bmp", Options: rasterOptions},
	{ID: "tiff", Name: "TIFF image", Category: convert.CategoryImage, Extensions: []string{"tif", "tiff"}, MIME: "image/tiff", Options: rasterOptions, MultiPage: true},
	{ID: "webp", Name: "WebP image", Category: convert.CategoryImage, Extensions: []string{"webp"}, MIME: "image/webp", Options: webpOptions},
	{ID: "avif", Name: "AVIF image", Category: convert.CategoryImage, Extensions: []string{"avif"}, MIME: "image/avif", Options: lossyRasterOptions},
	{ID: "qoi", Name: "QOI image", Category: convert.CategoryImage, Extensions: []string{"qoi"}, MIME: "image/qoi", Options: rasterOptions},
	{ID: "ppm", Name: "Netpbm image", Category: convert.CategoryImage, Extensions: []string{"ppm", "pgm", "pbm", "pnm", "pam"}, MIME: "image/x-portable-pixmap", Options: rasterOptions},
	{ID: "ico", Name: "Windows icon", Category: convert.CategoryImage, Extensions: []string{"ico"}, MIME: "image/vnd.microsoft.icon", Options: rasterOptions},
	{ID: "jxl", Name: "JPEG XL image", Category: convert.CategoryImage, Extensions: []string{"jxl"}, MIME: "image/jxl"},
	// Recognised only: the one pure-Go HEIC decoder (gen2brain/heic) embeds the AGPL-3.0 Rust
	// heic crate, and libheif/libde265 are LGPL; no permissive decoder exists.
	{ID: "heic", Name: "HEIC image", Category: convert.CategoryImage, Extensions: []string{"heic", "heif"}, MIME: "image/heic"},
	{ID: "psd", Name: "Photoshop document", Category: convert.CategoryImage, Extensions: []string{"psd"}, MIME: "image/vnd.adobe.photoshop"},
}
