package convert

// Format categories.
const (
	CategoryImage    = "image"
	CategoryDocument = "document"
	CategoryData     = "data"
	CategoryAudio    = "audio"
	CategoryArchive  = "archive"
)

// Options accepted by raster targets: resizing everywhere, quality where the encoder is lossy.
var (
	rasterOptions      = []string{OptWidth, OptHeight, OptFit}
	lossyRasterOptions = []string{OptQuality, OptWidth, OptHeight, OptFit}
)

// builtinFormats lists every format the service recognizes, convertible or not yet.
var builtinFormats = []Format{
	{ID: "png", Name: "PNG image", Category: CategoryImage, Extensions: []string{"png"}, MIME: "image/png", Options: rasterOptions},
	{ID: "jpeg", Name: "JPEG image", Category: CategoryImage, Extensions: []string{"jpg", "jpeg", "jpe"}, MIME: "image/jpeg", Options: lossyRasterOptions},
	{ID: "gif", Name: "GIF image", Category: CategoryImage, Extensions: []string{"gif"}, MIME: "image/gif", Options: rasterOptions},
	{ID: "bmp", Name: "BMP image", Category: CategoryImage, Extensions: []string{"bmp"}, MIME: "image/bmp", Options: rasterOptions},
	{ID: "tiff", Name: "TIFF image", Category: CategoryImage, Extensions: []string{"tif", "tiff"}, MIME: "image/tiff", Options: rasterOptions},
	{ID: "webp", Name: "WebP image", Category: CategoryImage, Extensions: []string{"webp"}, MIME: "image/webp", Options: lossyRasterOptions},
	{ID: "psd", Name: "Photoshop document", Category: CategoryImage, Extensions: []string{"psd"}, MIME: "image/vnd.adobe.photoshop"},
}

// Recognised formats nothing converts yet: listed so that clients see them and get
// unsupported_format rather than an unknown id.
var recognisedOnlyFormats = []Format{
	{ID: "rar", Name: "RAR archive", Category: CategoryArchive, Extensions: []string{"rar"}, MIME: "application/vnd.rar"},
	{ID: "7z", Name: "7-Zip archive", Category: CategoryArchive, Extensions: []string{"7z"}, MIME: "application/x-7z-compressed"},
}
