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

	{ID: "pdf", Name: "PDF document", Category: CategoryDocument, Extensions: []string{"pdf"}, MIME: "application/pdf"},
	{ID: "markdown", Name: "Markdown document", Category: CategoryDocument, Extensions: []string{"md", "markdown"}, MIME: "text/markdown"},
	{ID: "html", Name: "HTML document", Category: CategoryDocument, Extensions: []string{"html", "htm"}, MIME: "text/html"},
	{ID: "txt", Name: "Plain text", Category: CategoryDocument, Extensions: []string{"txt"}, MIME: "text/plain"},

	{ID: "json", Name: "JSON data", Category: CategoryData, Extensions: []string{"json"}, MIME: "application/json"},
	{ID: "csv", Name: "CSV data", Category: CategoryData, Extensions: []string{"csv"}, MIME: "text/csv"},
	{ID: "yaml", Name: "YAML data", Category: CategoryData, Extensions: []string{"yaml", "yml"}, MIME: "application/yaml"},

	{ID: "wav", Name: "WAV audio", Category: CategoryAudio, Extensions: []string{"wav"}, MIME: "audio/wav"},
	{ID: "flac", Name: "FLAC audio", Category: CategoryAudio, Extensions: []string{"flac"}, MIME: "audio/flac"},
	{ID: "mp3", Name: "MP3 audio", Category: CategoryAudio, Extensions: []string{"mp3"}, MIME: "audio/mpeg"},

	{ID: "zip", Name: "ZIP archive", Category: CategoryArchive, Extensions: []string{"zip"}, MIME: "application/zip"},
}
