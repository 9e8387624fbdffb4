package convert

// Format categories.
const (
	CategoryImage    = "image"
	CategoryDocument = "document"
	CategoryData     = "data"
	CategoryAudio    = "audio"
	CategoryArchive  = "archive"
)

// Options accepted by raster targets: resizing everywhere, quality where the encoder is lossy,
// lossless where the format has both modes, page and dpi for rendering PDF and SVG inputs
// (Options.ValidateInput refuses them for other inputs).
var (
	rasterOptions      = []string{OptWidth, OptHeight, OptFit, OptPage, OptDPI}
	lossyRasterOptions = []string{OptQuality, OptWidth, OptHeight, OptFit, OptPage, OptDPI}
	webpOptions        = []string{OptQuality, OptLossless, OptWidth, OptHeight, OptFit, OptPage, OptDPI}
)

// builtinFormats lists every format the service recognizes, convertible or not yet.
var builtinFormats = []Format{
	{ID: "png", Name: "PNG image", Category: CategoryImage, Extensions: []string{"png"}, MIME: "image/png", Options: rasterOptions},
	{ID: "jpeg", Name: "JPEG image", Category: CategoryImage, Extensions: []string{"jpg", "jpeg", "jpe"}, MIME: "image/jpeg", Options: lossyRasterOptions},
	{ID: "gif", Name: "GIF image", Category: CategoryImage, Extensions: []string{"gif"}, MIME: "image/gif", Options: rasterOptions},
	{ID: "bmp", Name: "BMP image", Category: CategoryImage, Extensions: []string{"bmp"}, MIME: "image/bmp", Options: rasterOptions},
	{ID: "tiff", Name: "TIFF image", Category: CategoryImage, Extensions: []string{"tif", "tiff"}, MIME: "image/tiff", Options: rasterOptions},
	{ID: "webp", Name: "WebP image", Category: CategoryImage, Extensions: []string{"webp"}, MIME: "image/webp", Options: webpOptions},
	{ID: "avif", Name: "AVIF image", Category: CategoryImage, Extensions: []string{"avif"}, MIME: "image/avif", Options: lossyRasterOptions},
	{ID: "qoi", Name: "QOI image", Category: CategoryImage, Extensions: []string{"qoi"}, MIME: "image/qoi", Options: rasterOptions},
	{ID: "ppm", Name: "Netpbm image", Category: CategoryImage, Extensions: []string{"ppm", "pgm", "pbm", "pnm", "pam"}, MIME: "image/x-portable-pixmap", Options: rasterOptions},
	{ID: "ico", Name: "Windows icon", Category: CategoryImage, Extensions: []string{"ico"}, MIME: "image/vnd.microsoft.icon", Options: rasterOptions},
	{ID: "jxl", Name: "JPEG XL image", Category: CategoryImage, Extensions: []string{"jxl"}, MIME: "image/jxl"},
	// Recognised only: the one pure-Go HEIC decoder (gen2brain/heic) embeds the AGPL-3.0 Rust
	// heic crate, and libheif/libde265 are LGPL; no permissive decoder exists.
	{ID: "heic", Name: "HEIC image", Category: CategoryImage, Extensions: []string{"heic", "heif"}, MIME: "image/heic"},
	{ID: "psd", Name: "Photoshop document", Category: CategoryImage, Extensions: []string{"psd"}, MIME: "image/vnd.adobe.photoshop"},
}

// Recognised formats nothing converts yet: listed so that clients see them and get
// unsupported_format rather than an unknown id.
var recognisedOnlyFormats = []Format{
	{ID: "rar", Name: "RAR archive", Category: CategoryArchive, Extensions: []string{"rar"}, MIME: "application/vnd.rar"},
	{ID: "7z", Name: "7-Zip archive", Category: CategoryArchive, Extensions: []string{"7z"}, MIME: "application/x-7z-compressed"},
}
