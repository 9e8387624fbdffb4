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
)

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
}

// IsZero reports whether no option is set.
func (o Options) IsZero() bool { return o == Options{} }

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
	return names
}

// OptionError names the option that is wrong and why.
type OptionError struct {
	Option  string
	Message string
}

func (e *OptionError) Error() string { return "options." + e.Option + ": " + e.Message }

// Validate checks the values and that the target format accepts every option that is set.
func (o Options) Validate(target Format) error {
	for _, name := range o.set() {
		if name == OptSheet {
			continue // an input option: ValidateInput
		}
		if !slices.Contains(target.Options, name) {
			accepted := "none"
			if len(target.Options) > 0 {
				accepted = strings.Join(target.Options, ", ")
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
	}
	if o.Pages != "" {
		if _, err := ParsePages(o.Pages); err != nil {
			return &OptionError{OptPages, err.Error()}
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
}

// Names lists the names of the options that are set, in the order of Options' fields.
func (o Options) Names() []string { return o.set() }
