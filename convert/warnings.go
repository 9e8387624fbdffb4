package convert

import "sync"

// Warning codes: short, stable names for what a conversion could not keep. They are part of
// the API (the Job's output.warnings[].code) and of the OpenAPI document's enum; add new ones
// here, never rename one.
const (
	// WarnSheetsDropped: a workbook had more sheets than the target could hold; the others were left out.
	WarnSheetsDropped = "sheets_dropped"
	// WarnGlyphsMissing: text uses characters that no available font can draw; they show as boxes.
	WarnGlyphsMissing = "glyphs_missing"
	// WarnTextNotRendered: text in the input (an SVG <text>, say) was not drawn into the output.
	WarnTextNotRendered = "text_not_rendered"
	// WarnMetadataDropped: metadata (EXIF, XMP, tags, comments) was not carried into the output.
	WarnMetadataDropped = "metadata_dropped"
	// WarnColorProfileDropped: an embedded ICC colour profile was not carried into the output.
	WarnColorProfileDropped = "color_profile_dropped"
	// WarnAnimationDropped: an animation was reduced to its first frame.
	WarnAnimationDropped = "animation_dropped"
	// WarnAlphaDropped: transparency was flattened onto a background because the target has none
	// (or, as GIF, only fully transparent or opaque pixels).
	WarnAlphaDropped = "alpha_dropped"
	// WarnBitDepthReduced: samples were reduced to fewer bits (16-bit image to 8-bit, float audio to 24-bit integers).
	WarnBitDepthReduced = "bit_depth_reduced"
	// WarnImagesDropped: images embedded in a document were left out of the output.
	WarnImagesDropped = "images_dropped"
	// WarnLinksDropped: hyperlinks were reduced to their text.
	WarnLinksDropped = "links_dropped"
	// WarnFormattingDropped: formatting (styles, formulas, merged cells) was reduced to plain values.
	WarnFormattingDropped = "formatting_dropped"
	// WarnPermissionsDropped: file modes or owners of archive entries were not carried over.
	WarnPermissionsDropped = "permissions_dropped"
	// WarnPagesDropped: a document of several pages became one image (the first page, or the
	// one the page option names).
	WarnPagesDropped = "pages_dropped"
	// WarnImageResized: an image larger than the target holds was shrunk to fit (an icon is at
	// most 256x256) because the job set no size.
	WarnImageResized = "image_resized"
	// WarnQualityReduced: a lossy target was written at a lower quality than asked (or than
	// the default) to fit max_bytes; the message names the quality and the encodes spent.
	WarnQualityReduced = "quality_reduced"
)

// WarningCodes lists every warning code, in the order above; the OpenAPI document's enum and
// the client's constants are checked against it.
var WarningCodes = []string{
	WarnSheetsDropped, WarnGlyphsMissing, WarnTextNotRendered, WarnMetadataDropped,
	WarnColorProfileDropped, WarnAnimationDropped, WarnAlphaDropped, WarnBitDepthReduced,
	WarnImagesDropped, WarnLinksDropped,
	WarnFormattingDropped, WarnPermissionsDropped, WarnPagesDropped,
	WarnImageResized, WarnQualityReduced,
}

// Warning is something a successful conversion could not keep: a stable Code (one of
// WarningCodes) and a Message for people, e.g. "sheets Costs, Notes were not converted".
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// warnings collects the warnings of one conversion, all its steps included; the first warning
// of each code is kept, in the order they came. It is safe for concurrent use.
type warnings struct {
	mu   sync.Mutex
	list []Warning
}

func (w *warnings) add(code, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, x := range w.list {
		if x.Code == code {
			return
		}
	}
	w.list = append(w.list, Warning{Code: code, Message: message})
}

func (w *warnings) get() []Warning {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.list) == 0 {
		return nil
	}
	return append([]Warning(nil), w.list...)
}

// Warn reports that the conversion dropped something it could not keep; the job succeeds and
// its output lists the warning. Only the first warning of each code is kept. Warn may be
// called from any goroutine while Run runs, and does nothing on Params without a collector
// (a converter called directly rather than through Catalog.Convert).
func (p Params) Warn(code, message string) {
	if p.warnings != nil {
		p.warnings.add(code, message)
	}
}

// Warnings returns the warnings reported so far through p (nil when none); for tests that
// run a converter's Run directly with Params from WithWarnings.
func (p Params) Warnings() []Warning {
	if p.warnings == nil {
		return nil
	}
	return p.warnings.get()
}

// WithWarnings returns p with a fresh warning collector, for callers (tests, tools) that run a
// converter's Run directly and want to see what it reports.
func (p Params) WithWarnings() Params {
	p.warnings = &warnings{}
	return p
}
