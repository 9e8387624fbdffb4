package convert

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxPageNumber bounds every page number a pages option may name: the most pages a PDF read
// here may have (document.MaxPDFPages), so a selection never describes more work than that.
const MaxPageNumber = 10000

// maxPagesSpecLen bounds the text of a pages option.
const maxPagesSpecLen = 1000

// PageRange is one item of a pages option: the pages First to Last (1-based, inclusive);
// Last 0 means "to the last page" ("3-").
type PageRange struct {
	First, Last int
}

// PageSpec is a parsed pages option: "all", or ranges and single pages in the order given
// ("1-3,7", "7,1-3", "3-"). No page is named twice.
type PageSpec struct {
	All    bool
	Ranges []PageRange
}

// Single reports whether the spec names exactly one page ("3", "3-3"): such a job writes one
// file of the target format, where any other spec may name several pages and writes an archive
// (or a multi-page TIFF or PDF), whatever the document's page count turns out to be.
func (s PageSpec) Single() bool {
	return !s.All && len(s.Ranges) == 1 && s.Ranges[0].First == s.Ranges[0].Last
}

// ParsePages parses a pages option. The grammar: "all", or items separated by commas, each a
// page number ("7"), a closed range ("1-3", first <= last) or an open range ("3-": to the last
// page); page numbers are 1 to MaxPageNumber, spaces around items and dashes are allowed, and
// no page may be named twice (overlapping ranges are refused). The order of the items is the
// order of the output's pages.
func ParsePages(spec string) (PageSpec, error) {
	if len(spec) > maxPagesSpecLen {
		return PageSpec{}, fmt.Errorf("is longer than %d characters", maxPagesSpecLen)
	}
	s := strings.TrimSpace(spec)
	if s == "" {
		return PageSpec{}, fmt.Errorf(`is empty: give "all" or pages such as "1-3,7"`)
	}
	if strings.EqualFold(s, "all") {
		return PageSpec{All: true}, nil
	}
	var out PageSpec
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return PageSpec{}, fmt.Errorf("has an empty item: separate pages with single commas, as in \"1-3,7\"")
		}
		var r PageRange
		first, last, isRange := strings.Cut(item, "-")
		n, err := pageNumber(strings.TrimSpace(first), item)
		if err != nil {
			return PageSpec{}, err
		}
		r.First, r.Last = n, n
		if isRange {
			r.Last = 0
			if l := strings.TrimSpace(last); l != "" {
				if r.Last, err = pageNumber(l, item); err != nil {
					return PageSpec{}, err
				}
				if r.Last < r.First {
					return PageSpec{}, fmt.Errorf("has the reversed range %q: write the lower page first", item)
				}
			}
		}
		for _, o := range out.Ranges {
			if overlaps(o, r) {
				return PageSpec{}, fmt.Errorf("names page %d twice (%s and %s)", max(o.First, r.First), o, r)
			}
		}
		out.Ranges = append(out.Ranges, r)
	}
	return out, nil
}

// pageNumber parses one page number of item.
func pageNumber(s, item string) (int, error) {
	if s == "" || len(s) > 6 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("has %q, which is not a page number or a range such as \"1-3\" or \"3-\"", item)
	}
	n, _ := strconv.Atoi(s)
	switch {
	case n == 0:
		return 0, fmt.Errorf("has page 0: pages are numbered from 1")
	case n > MaxPageNumber:
		return 0, fmt.Errorf("has page %d, over the %d page limit", n, MaxPageNumber)
	}
	return n, nil
}

// overlaps reports whether two ranges share a page.
func overlaps(a, b PageRange) bool {
	end := func(r PageRange) int {
		if r.Last == 0 {
			return MaxPageNumber
		}
		return r.Last
	}
	return a.First <= end(b) && b.First <= end(a)
}

// String writes the range as it is written in a pages option.
func (r PageRange) String() string {
	switch {
	case r.Last == 0:
		return fmt.Sprintf("%d-", r.First)
	case r.First == r.Last:
		return strconv.Itoa(r.First)
	}
	return fmt.Sprintf("%d-%d", r.First, r.Last)
}

// String writes the spec in its canonical form ("all", "1-3,7").
func (s PageSpec) String() string {
	if s.All {
		return "all"
	}
	parts := make([]string, len(s.Ranges))
	for i, r := range s.Ranges {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// Resolve lists the selected pages (1-based, in output order) of a document of n pages; a page
// past the last is an *Error naming the count: "pages: 9 is past the last page (3)".
func (s PageSpec) Resolve(n int) ([]int, error) {
	if s.All {
		pages := make([]int, n)
		for i := range pages {
			pages[i] = i + 1
		}
		return pages, nil
	}
	var pages []int
	for _, r := range s.Ranges {
		last := r.Last
		if last == 0 {
			last = n
		}
		if r.First > n {
			return nil, Errorf(nil, "pages: %d is past the last page (%d)", r.First, n)
		}
		if last > n {
			return nil, Errorf(nil, "pages: %d is past the last page (%d)", last, n)
		}
		for p := r.First; p <= last; p++ {
			pages = append(pages, p)
		}
	}
	return pages, nil
}

// pagedFormat is the format whose pages the pages option selects: PDF, rendered page by page
// or copied; other documents reach rasters through it.
const pagedFormat = "pdf"

// ValidatePages checks that the pages option applies to converting input to target: the
// chain renders pages of a PDF (pdf, or a document laid out as PDF, to a raster format) or
// selects pages of one (pdf to pdf). It returns an *OptionError otherwise.
func (c *Catalog) ValidatePages(input, target string, o Options) error {
	if o.Pages == "" || c.PagesApply(input, target) {
		return nil
	}
	return &OptionError{OptPages, fmt.Sprintf("does not apply to %s to %s: it selects pages of a PDF (or of a document laid out as PDF) rendered as images, or copied into a new PDF", input, target)}
}

// PagesApply reports whether the pages option applies to converting input to target: the
// chain renders pages of a PDF (pdf, or a document laid out as PDF, to a raster format) or
// selects pages of one (pdf to pdf).
func (c *Catalog) PagesApply(input, target string) bool {
	if input == pagedFormat && target == pagedFormat {
		return true
	}
	path, err := c.Path(input, target)
	if err != nil {
		return false
	}
	f, ok := c.Format(target)
	for _, s := range path {
		if s.From == pagedFormat && ok && f.Category == CategoryImage {
			return true
		}
	}
	return false
}

// ApplicableOptions is ApplicableOptions for two formats of the catalog; nil when either is
// unknown.
func (c *Catalog) ApplicableOptions(input, target string) []string {
	in, ok1 := c.Format(input)
	out, ok2 := c.Format(target)
	if !ok1 || !ok2 {
		return nil
	}
	return ApplicableOptions(in, out, c.PagesApply(input, target))
}

// archiveFormat is the format several rendered pages are written in when the target holds
// one image.
const archiveFormat = "zip"

// OutputFormat is the format a job's output is written in: the target, or zip when the pages
// option may select several pages and the target holds one page (PNG, JPEG, WebP...; TIFF and
// PDF hold them all). The output's MIME type and file extension are this format's.
func (c *Catalog) OutputFormat(target string, o Options) Format {
	f, _ := c.Format(target)
	if o.Pages == "" || f.MultiPage {
		return f
	}
	spec, err := ParsePages(o.Pages)
	if err != nil || spec.Single() {
		return f
	}
	if z, ok := c.Format(archiveFormat); ok {
		return z
	}
	return f
}
