package convert

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Option names, as they appear in the create request's "options" object.
const (
	OptQuality  = "quality"
	OptWidth    = "width"
	OptHeight   = "height"
	OptFit      = "fit"
	OptPage     = "page"
	OptDPI      = "dpi"
	OptLossless = "lossless"
	// OptSheet picks the worksheet of an xlsx input, by name or 1-based index; it is an input
	// option, accepted whatever the target (ValidateInput checks the input is xlsx).
	OptSheet = "sheet"
	// OptPages selects several pages of a PDF (or a document laid out as PDF): "all", "1-3,7".
	OptPages = "pages"

	// Transforms of image targets (issue 31).
	OptRotate        = "rotate"
	OptFlip          = "flip"
	OptCrop          = "crop"
	OptBackground    = "background"
	OptAutoOrient    = "auto_orient"
	OptStripMetadata = "strip_metadata"
	OptMaxBytes      = "max_bytes"
)

// Flip directions.
const (
	FlipHorizontal = "horizontal" // mirror left to right
	FlipVertical   = "vertical"   // mirror top to bottom
)

// MaxOutputBytesOption bounds max_bytes: larger values are no bound at all in practice.
const MaxOutputBytesOption = 1 << 40

// Crop is a rectangle of the source image in pixels, after EXIF orientation is applied.
type Crop struct {
	Left   int `json:"left"`
	Top    int `json:"top"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

// MaxSheetNameLen is the longest worksheet name Excel allows, in characters.
const MaxSheetNameLen = 31

// Fit modes for resizing to width and height.
const (
	FitContain = "contain" // keep the aspect ratio, fit inside the box (the default)
	FitCover   = "cover"   // keep the aspect ratio, fill the box, crop the overflow
	FitFill    = "fill"    // stretch to exactly the box
)

// MaxDimension bounds width and height options; the pixel limit applies on top.
const MaxDimension = 32768

// Options tune a conversion. Zero values mean "the converter's default". Which options a target
// accepts is listed in its Format.Options; others are refused at create.
type Options struct {
	Quality  int    `json:"quality,omitempty"`
	Width    int    `json:"width,omitempty"`
	Height   int    `json:"height,omitempty"`
	Fit      string `json:"fit,omitempty"`
	Page     int    `json:"page,omitempty"`
	DPI      int    `json:"dpi,omitempty"`
	Lossless *bool  `json:"lossless,omitempty"`
	// Sheet is the worksheet of an xlsx input to convert: its name, or its 1-based position
	// in the workbook as digits ("2") when no sheet has that name. Empty means the first.
	Sheet string `json:"sheet,omitempty"`
	// Pages selects pages of a PDF input, or of a document laid out as PDF, in ParsePages'
	// grammar: one page gives one file; a spec that may name several gives a zip of
	// page-0001.png... (a multi-page TIFF for tiff, a PDF of those pages for pdf).
	Pages string `json:"pages,omitempty"`

	// Rotate turns the image clockwise by 90, 180 or 270 degrees, after orientation and crop.
	Rotate int `json:"rotate,omitempty"`
	// Flip mirrors the image (FlipHorizontal or FlipVertical), after Rotate.
	Flip string `json:"flip,omitempty"`
	// Crop keeps a rectangle of the source, in pixels of the upright image, before resizing.
	Crop *Crop `json:"crop,omitempty"`
	// Background is the "#rrggbb" colour transparency is flattened onto for targets without
	// alpha; white when empty.
	Background string `json:"background,omitempty"`
	// AutoOrient applies the input's EXIF orientation to the pixels; nil means true.
	AutoOrient *bool `json:"auto_orient,omitempty"`
	// StripMetadata leaves the input's EXIF, XMP and ICC profile out of the output; nil means
	// true. False carries them into targets that hold them.
	StripMetadata *bool `json:"strip_metadata,omitempty"`
	// MaxBytes is the largest output accepted: lossy targets lower their quality to fit, and
	// the job fails (error_reason output_too_large) when even the lowest quality does not.
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// IsZero reports whether no option is set.
func (o Options) IsZero() bool { return len(o.set()) == 0 }

// Orient reports whether the input's EXIF orientation is applied (auto_orient, default true).
func (o Options) Orient() bool { return o.AutoOrient == nil || *o.AutoOrient }

// KeepMetadata reports whether EXIF, XMP and ICC are carried into the output
// (strip_metadata: false).
func (o Options) KeepMetadata() bool { return o.StripMetadata != nil && !*o.StripMetadata }

// ChangingOptions lists the options set in o that make an output differ from an input of the
// same format: every option but auto_orient false and fit alone (it only shapes width and
// height). A same-format job needs at least one.
func (o Options) ChangingOptions() []string {
	var names []string
	for _, n := range o.set() {
		switch {
		case n == OptSheet, n == OptFit:
		case n == OptAutoOrient && !o.Orient():
		default:
			names = append(names, n)
		}
	}
	return names
}

// SameFormatOptions lists, of the options target accepts, those that would make a job from
// target to target do something; create names them when a same-format job sets none.
func SameFormatOptions(target Format) []string {
	var names []string
	for _, n := range ApplicableOptions(target, target, target.ID == pagedFormat) {
		if n != OptFit {
			names = append(names, n)
		}
	}
	return names
}

// set lists the names of the options that are set.
func (o Options) set() []string {
	var names []string
	add := func(ok bool, name string) {
		if ok {
			names = append(names, name)
		}
	}
	add(o.Quality != 0, OptQuality)
	add(o.Width != 0, OptWidth)
	add(o.Height != 0, OptHeight)
	add(o.Fit != "", OptFit)
	add(o.Page != 0, OptPage)
	add(o.DPI != 0, OptDPI)
	add(o.Lossless != nil, OptLossless)
	add(o.Sheet != "", OptSheet)
	add(o.Pages != "", OptPages)
	add(o.Rotate != 0, OptRotate)
	add(o.Flip != "", OptFlip)
	add(o.Crop != nil, OptCrop)
	add(o.Background != "", OptBackground)
	add(o.AutoOrient != nil, OptAutoOrient)
	add(o.StripMetadata != nil, OptStripMetadata)
	add(o.MaxBytes != 0, OptMaxBytes)
	return names
}

// OptionError names the option that is wrong and why.
type OptionError struct {
	Option  string
	Message string
}

func (e *OptionError) Error() string { return "options." + e.Option + ": " + e.Message }

// Validate checks the values and that the target format accepts every option that is set.
// A refusal lists every option target accepts; ValidateConversion lists those that apply to
// one input.
func (o Options) Validate(target Format) error { return o.validate(target, target.Options) }

// ValidateConversion is Validate for converting input to target: it refuses the same options,
// and its "accepted" list names only ApplicableOptions(input, target, pages).
func (o Options) ValidateConversion(input, target Format, pages bool) error {
	return o.validate(target, ApplicableOptions(input, target, pages))
}

// ApplicableOptions lists, in target.Options' order, the options that apply when converting
// input to target: page only for a pdf input, dpi for pdf and svg, sheet for xlsx, the image
// transforms (rotate, flip, crop, auto_orient, strip_metadata) for image inputs, and pages
// when pages is true (Catalog.PagesApply). Create's refusals and convsvc formats name these.
func ApplicableOptions(input, target Format, pages bool) []string {
	names := []string{}
	for _, n := range target.Options {
		switch {
		case n == OptPage && input.ID != "pdf",
			n == OptDPI && input.ID != "pdf" && input.ID != "svg",
			n == OptSheet && input.ID != "xlsx",
			n == OptPages && !pages,
			slices.Contains(imageOnlyOptions, n) && input.Category != CategoryImage:
			continue
		}
		names = append(names, n)
	}
	return names
}

func (o Options) validate(target Format, accepted []string) error {
	for _, name := range o.set() {
		if name == OptSheet {
			continue // an input option: ValidateInput
		}
		if !slices.Contains(target.Options, name) {
			accepted := strings.Join(accepted, ", ")
			if accepted == "" {
				accepted = "none"
			}
			return &OptionError{name, fmt.Sprintf("not accepted when converting to %s (accepted: %s)", target.ID, accepted)}
		}
	}
	switch {
	case o.Quality != 0 && (o.Quality < 1 || o.Quality > 100):
		return &OptionError{OptQuality, "must be from 1 to 100"}
	case o.Width < 0 || o.Width > MaxDimension:
		return &OptionError{OptWidth, fmt.Sprintf("must be from 1 to %d", MaxDimension)}
	case o.Height < 0 || o.Height > MaxDimension:
		return &OptionError{OptHeight, fmt.Sprintf("must be from 1 to %d", MaxDimension)}
	case o.Fit != "" && o.Fit != FitContain && o.Fit != FitCover && o.Fit != FitFill:
		return &OptionError{OptFit, "must be contain, cover or fill"}
	case o.Fit != "" && (o.Width == 0 || o.Height == 0):
		return &OptionError{OptFit, "needs both width and height"}
	case o.Page < 0:
		return &OptionError{OptPage, "must be 1 or more"}
	case o.DPI != 0 && (o.DPI < 10 || o.DPI > 1200):
		return &OptionError{OptDPI, "must be from 10 to 1200"}
	case o.Pages != "" && o.Page != 0:
		return &OptionError{OptPages, "cannot be combined with page: give the one page as pages"}
	case utf8.RuneCountInString(o.Sheet) > MaxSheetNameLen || !utf8.ValidString(o.Sheet):
		return &OptionError{OptSheet, fmt.Sprintf("must be a sheet name of at most %d characters or a 1-based index", MaxSheetNameLen)}
	case o.Rotate != 0 && o.Rotate != 90 && o.Rotate != 180 && o.Rotate != 270:
		return &OptionError{OptRotate, fmt.Sprintf("must be 90, 180 or 270 (degrees clockwise), not %d", o.Rotate)}
	case o.Flip != "" && o.Flip != FlipHorizontal && o.Flip != FlipVertical:
		return &OptionError{OptFlip, "must be horizontal or vertical"}
	case o.Crop != nil && (o.Crop.Left < 0 || o.Crop.Top < 0):
		return &OptionError{OptCrop, "left and top must be 0 or more"}
	case o.Crop != nil && (o.Crop.Width < 1 || o.Crop.Height < 1 || o.Crop.Width > MaxDimension*4 || o.Crop.Height > MaxDimension*4):
		return &OptionError{OptCrop, fmt.Sprintf("width and height must be from 1 to %d", MaxDimension*4)}
	case o.Crop != nil && (o.Crop.Left > MaxDimension*4 || o.Crop.Top > MaxDimension*4):
		return &OptionError{OptCrop, fmt.Sprintf("left and top must be at most %d", MaxDimension*4)}
	case o.Background != "" && !validHexColor(o.Background):
		return &OptionError{OptBackground, `must be a colour written "#rrggbb", such as "#ffffff"`}
	case o.MaxBytes < 0 || o.MaxBytes > MaxOutputBytesOption:
		return &OptionError{OptMaxBytes, fmt.Sprintf("must be from 1 to %d bytes", int64(MaxOutputBytesOption))}
	}
	if o.Pages != "" {
		if _, err := ParsePages(o.Pages); err != nil {
			return &OptionError{OptPages, err.Error()}
		}
	}
	return nil
}

// validHexColor reports whether s is "#rrggbb".
func validHexColor(s string) bool {
	if len(s) != 7 || s[0] != '#' {
		return false
	}
	for _, c := range []byte(s[1:]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// BackgroundRGB returns the background colour's red, green and blue; white when unset.
func (o Options) BackgroundRGB() (r, g, b uint8) {
	if !validHexColor(o.Background) {
		return 0xff, 0xff, 0xff
	}
	h := func(c byte) uint8 {
		switch {
		case c <= '9':
			return c - '0'
		case c >= 'a':
			return c - 'a' + 10
		default:
			return c - 'A' + 10
		}
	}
	s := o.Background
	return h(s[1])<<4 | h(s[2]), h(s[3])<<4 | h(s[4]), h(s[5])<<4 | h(s[6])
}

// imageOnlyOptions are the transforms only image inputs take.
var imageOnlyOptions = []string{OptRotate, OptFlip, OptCrop, OptAutoOrient, OptStripMetadata}

// ValidateSource checks the options that only an input of some category takes: the image
// transforms (rotate, flip, crop, auto_orient, strip_metadata) need an image input.
func (o Options) ValidateSource(input Format) error {
	if input.Category == CategoryImage {
		return nil
	}
	for _, n := range o.set() {
		if slices.Contains(imageOnlyOptions, n) {
			return &OptionError{n, fmt.Sprintf("only applies when the input is an image (this one is %s)", input.ID)}
		}
	}
	return nil
}

// ValidateInput checks the options that only mean something for some inputs: page for PDF,
// dpi for PDF and SVG, sheet for xlsx.
func (o Options) ValidateInput(input string) error {
	switch {
	case o.Page != 0 && input != "pdf":
		return &OptionError{OptPage, "only applies when the input is pdf"}
	case o.DPI != 0 && input != "pdf" && input != "svg":
		return &OptionError{OptDPI, "only applies when the input is pdf or svg"}
	case o.Sheet != "" && input != "xlsx":
		return &OptionError{OptSheet, "only applies when the input is xlsx"}
	}
	return nil
}

// Params is what a converter runs with: the service's limits and the job's options.
type Params struct {
	Limits
	Options Options
	// Embedded reserves the memory of resources a converter decodes inside its input (images
	// in a document) from the same budget as direct conversions.
	Embedded EmbeddedMemory
	// ScratchDir is the directory for the converter's temporary files (Catalog.Convert's
	// scratchDir; "" means os.TempDir()), which the converter removes before it returns.
	ScratchDir string

	// warnings collects what Warn reports; nil outside Catalog.Convert.
	warnings *warnings
	// progress takes Progress's counts; nil outside Catalog.Convert or on a path that
	// does not count.
	progress *stepProgress
}

// Names lists the names of the options that are set, in the order of Options' fields.
func (o Options) Names() []string { return o.set() }
