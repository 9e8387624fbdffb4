package data

import (
	"archive/zip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/xuri/excelize/v2"

	"github.com/convsvc/convsvc/convert"
)

// Limits of xlsx input. excelize reads the whole file into memory (it has no io.ReaderAt
// entry point), unzips every part but the worksheets and shared strings into memory, and
// holds the shared strings table parsed, so those are bounded before it opens the file.
const (
	// XLSXMaxInputBytes is the largest xlsx file read.
	XLSXMaxInputBytes = 256 << 20
	// XLSXMaxUnzippedBytes bounds the declared uncompressed size of all parts together.
	XLSXMaxUnzippedBytes = 1 << 30
	// XLSXMaxSharedStringsBytes bounds the uncompressed shared strings part.
	XLSXMaxSharedStringsBytes = 128 << 20
	// XLSXMaxParts bounds the number of parts (zip entries).
	XLSXMaxParts = 10_000
	// XLSXMaxRows is the most rows a worksheet holds, header included (Excel's limit).
	XLSXMaxRows = 1_048_576
	// xlsxMaxCellChars is the most UTF-16 units Excel keeps in a cell; excelize would cut the rest.
	xlsxMaxCellChars = 32767
)

// xlsxTableReader reads one worksheet as a table: its first row is the header. The sheet is
// the one the sheet option names, else the first in workbook order; then the others are not
// read, and a warning (sheets_dropped) names them. Cells are read as Excel displays them
// (number formats applied), then typed like CSV fields, with Excel's TRUE and FALSE as
// booleans. Empty rows at the end are dropped.
type xlsxTableReader struct {
	f       *excelize.File
	rows    *excelize.Rows
	cols    []string
	row     []any
	empties int // empty rows held back until a non-empty one shows they are not trailing
	pending []string
	rowNo   int
	ctx     context.Context
}

// xlsxExtras is what a workbook holds beside its cells' values, which a table does not keep.
type xlsxExtras struct {
	formulas, pictures, links bool
}

// report warns about the workbook's formulas, charts and pictures, and hyperlinks.
func (x xlsxExtras) report(p convert.Params) {
	if x.formulas {
		p.Warn(convert.WarnFormattingDropped, "the workbook has formulas; their cells were written as their last computed values")
	}
	if x.pictures {
		p.Warn(convert.WarnImagesDropped, "the workbook's charts and pictures were not converted")
	}
	if x.links {
		p.Warn(convert.WarnLinksDropped, "the workbook's hyperlinks were reduced to their cells' text")
	}
}

// checkXLSXPackage looks into the zip before excelize does: that it is an xlsx, and that
// its parts stay within the limits, so a zip bomb is refused before anything is inflated.
// It also notes the parts a table does not keep (extras).
func checkXLSXPackage(in *io.SectionReader, extras *xlsxExtras) error {
	head := make([]byte, convert.SniffLen)
	n, _ := in.ReadAt(head, 0)
	if id, name := convert.Sniff(head[:n]); id != "zip" {
		if n == 0 {
			return convert.Errorf(nil, "input is not a valid XLSX file (it is empty)")
		}
		return convert.Errorf(nil, "input is not a valid XLSX file (it looks like %s)", name)
	}
	if in.Size() > XLSXMaxInputBytes {
		return convert.Errorf(nil, "input is %s, over the %s limit for XLSX files", convert.ByteSize(in.Size()), convert.ByteSize(XLSXMaxInputBytes))
	}
	zr, err := zip.NewReader(in, in.Size())
	if err != nil {
		return convert.Errorf(err, "input is not a valid XLSX file (its zip structure is damaged)")
	}
	if len(zr.File) > XLSXMaxParts {
		return convert.Errorf(nil, "input is not a valid XLSX file (it has %d parts, over the limit of %d)", len(zr.File), XLSXMaxParts)
	}
	var total uint64
	workbook := false
	for _, f := range zr.File {
		name := strings.ToLower(strings.ReplaceAll(f.Name, `\`, "/"))
		if name == "xl/workbook.xml" {
			workbook = true
		}
		switch {
		case name == "xl/calcchain.xml":
			extras.formulas = true // Excel lists every formula cell there
		case strings.HasPrefix(name, "xl/media/") || strings.HasPrefix(name, "xl/charts/"):
			extras.pictures = true
		case strings.HasPrefix(name, "xl/worksheets/_rels/") && f.UncompressedSize64 < 1<<20:
			if rc, err := f.Open(); err == nil {
				rels, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
				rc.Close()
				if strings.Contains(string(rels), "/relationships/hyperlink") {
					extras.links = true
				}
			}
		}
		total += f.UncompressedSize64
		if total > XLSXMaxUnzippedBytes {
			return convert.Errorf(nil, "input unzips to more than %s, over the limit for XLSX files (a zip bomb?)", convert.ByteSize(XLSXMaxUnzippedBytes))
		}
		if name == "xl/sharedstrings.xml" && f.UncompressedSize64 > XLSXMaxSharedStringsBytes {
			return convert.Errorf(nil, "input's shared strings unzip to %s, over the limit of %s", convert.ByteSize(int64(f.UncompressedSize64)), convert.ByteSize(XLSXMaxSharedStringsBytes))
		}
	}
	if !workbook {
		return convert.Errorf(nil, "input is not a valid XLSX file (it is a zip without xl/workbook.xml)")
	}
	return nil
}

func newXLSXTableReader(ctx context.Context, in *io.SectionReader, p convert.Params) (*xlsxTableReader, error) {
	var extras xlsxExtras
	if err := checkXLSXPackage(in, &extras); err != nil {
		return nil, err
	}
	f, err := excelize.OpenReader(&convert.ContextReader{Ctx: ctx, R: io.NewSectionReader(in, 0, in.Size())}, excelize.Options{
		UnzipSizeLimit:    XLSXMaxUnzippedBytes,
		UnzipXMLSizeLimit: 16 << 20, // larger worksheets go to temporary files
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, excelize.ErrWorkbookFileFormat) {
			return nil, convert.Errorf(err, "input is not a valid XLSX file (it may be encrypted or an older .xls)")
		}
		return nil, convert.Errorf(err, "input is not a valid XLSX file (%v)", err)
	}
	t := &xlsxTableReader{f: f, ctx: ctx}
	sheets := f.GetSheetList()
	if len(sheets) == 0 {
		f.Close()
		return nil, convert.Errorf(nil, "input is not a valid XLSX file (it has no worksheet)")
	}
	sheet, err := pickSheet(sheets, p.Options.Sheet)
	if err != nil {
		f.Close()
		return nil, err
	}
	if p.Options.Sheet == "" && len(sheets) > 1 {
		p.Warn(convert.WarnSheetsDropped, fmt.Sprintf("the workbook has %d sheets; only the first, %s, was converted, not %s (choose one with the sheet option)",
			len(sheets), quoteSheets(sheets[:1]), quoteSheets(sheets[1:])))
	}
	extras.report(p)
	if t.rows, err = f.Rows(sheet); err != nil {
		f.Close()
		return nil, convert.Errorf(err, "input is not a valid XLSX file (its worksheet %q cannot be read: %v)", sheet, err)
	}
	header, err := t.nextRaw()
	if err == io.EOF {
		return t, nil
	}
	if err != nil {
		t.close()
		return nil, err
	}
	t.cols = header
	t.row = make([]any, len(header))
	return t, nil
}

// pickSheet returns the sheet the sheet option names: by exact name, then by name ignoring
// case (as Excel compares them), then by 1-based position when want is all digits; the first
// sheet when want is empty. A sheet the workbook lacks fails naming the sheets it has.
func pickSheet(sheets []string, want string) (string, error) {
	if want == "" {
		return sheets[0], nil
	}
	for _, s := range sheets {
		if s == want {
			return s, nil
		}
	}
	for _, s := range sheets {
		if strings.EqualFold(s, want) {
			return s, nil
		}
	}
	if strings.Trim(want, "0123456789") == "" {
		n, err := strconv.Atoi(want)
		if err == nil && n >= 1 && n <= len(sheets) {
			return sheets[n-1], nil
		}
		return "", convert.Errorf(nil, "options.sheet: the workbook has %d sheet(s), so there is no sheet %s (its sheets: %s)", len(sheets), want, quoteSheets(sheets))
	}
	return "", convert.Errorf(nil, "options.sheet: the workbook has no sheet named %q (its sheets: %s)", want, quoteSheets(sheets))
}

// quoteSheets lists sheet names for a message: "Books", "Costs" and at most 20 of them.
func quoteSheets(sheets []string) string {
	const most = 20
	var b strings.Builder
	for i, s := range sheets {
		if i == most {
			fmt.Fprintf(&b, " and %d more", len(sheets)-most)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(s))
	}
	return b.String()
}

// nextRaw returns the next row's cell texts, holding back empty rows until a non-empty row
// follows them.
func (t *xlsxTableReader) nextRaw() ([]string, error) {
	if t.empties > 0 {
		t.empties--
		return nil, nil
	}
	if t.pending != nil {
		p := t.pending
		t.pending = nil
		return p, nil
	}
	for t.rows.Next() {
		t.rowNo++
		if t.rowNo&0xff == 0 {
			if err := t.ctx.Err(); err != nil {
				return nil, err
			}
		}
		cells, err := t.rows.Columns()
		if err != nil {
			return nil, convert.Errorf(err, "input is not a valid XLSX file (row %d: %v)", t.rowNo, err)
		}
		if len(cells) > DataMaxColumns {
			return nil, convert.Errorf(nil, "input has %d columns, over the limit of %d", len(cells), DataMaxColumns)
		}
		if len(cells) == 0 {
			t.empties++
			continue
		}
		if t.empties > 0 {
			t.pending = cells
			t.empties--
			return nil, nil
		}
		return cells, nil
	}
	if err := t.rows.Error(); err != nil {
		return nil, convert.Errorf(err, "input is not a valid XLSX file (%v)", err)
	}
	return nil, io.EOF
}

func (t *xlsxTableReader) columns() []string { return t.cols }

func (t *xlsxTableReader) next() ([]any, error) {
	cells, err := t.nextRaw()
	if err != nil {
		return nil, err
	}
	if len(cells) > len(t.cols) {
		col, _ := excelize.ColumnNumberToName(len(t.cols) + 1)
		return nil, lossf("row %d has a value in column %s, beyond the %d columns of the header row", t.rowNo, col, len(t.cols))
	}
	for i := range t.row {
		s := ""
		if i < len(cells) {
			s = cells[i]
		}
		switch s {
		case "TRUE": // how Excel shows a boolean cell
			t.row[i] = true
		case "FALSE":
			t.row[i] = false
		default:
			t.row[i] = inferCell(s)
		}
	}
	return t.row, nil
}

func (t *xlsxTableReader) close() {
	if t.rows != nil {
		t.rows.Close()
	}
	t.f.Close() // removes excelize's temporary files
}

// xlsxTableWriter writes one worksheet with excelize's StreamWriter: the header row, then
// the rows, numbers as numbers where a double holds them exactly (15 significant digits).
type xlsxTableWriter struct {
	ctx  context.Context
	out  io.Writer
	f    *excelize.File
	sw   *excelize.StreamWriter
	rows int
	vals []any
}

func newXLSXTableWriter(ctx context.Context, out io.Writer) (*xlsxTableWriter, error) {
	f := excelize.NewFile()
	sw, err := f.NewStreamWriter("Sheet1")
	if err != nil {
		f.Close()
		return nil, err
	}
	return &xlsxTableWriter{ctx: ctx, out: out, f: f, sw: sw}, nil
}

func (x *xlsxTableWriter) put(vals []any) error {
	x.rows++
	if x.rows > XLSXMaxRows {
		return lossf("the table has more than %d rows, header included, which is all an XLSX worksheet holds", XLSXMaxRows)
	}
	if len(vals) > DataMaxColumns {
		return lossf("the table has %d columns, more than the %d an XLSX worksheet holds", len(vals), DataMaxColumns)
	}
	for i, v := range vals {
		if s, ok := v.(string); ok && len(s) > xlsxMaxCellChars/3 && utf16Len(s) > xlsxMaxCellChars {
			cell, _ := excelize.CoordinatesToCellName(i+1, x.rows)
			return lossf("cell %s holds %d characters, more than the %d an XLSX cell holds", cell, utf16Len(s), xlsxMaxCellChars)
		}
	}
	cell, _ := excelize.CoordinatesToCellName(1, x.rows)
	return x.sw.SetRow(cell, vals)
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
		if r == utf8.RuneError {
			n++
		}
	}
	return n
}

func (x *xlsxTableWriter) begin(cols []string) error {
	if len(cols) == 0 {
		return nil
	}
	vals := make([]any, len(cols))
	for i, c := range cols {
		vals[i] = c
	}
	x.vals = make([]any, len(cols))
	return x.put(vals)
}

func (x *xlsxTableWriter) row(vals []any) error {
	if x.rows&0xff == 0 {
		if err := x.ctx.Err(); err != nil {
			return err
		}
	}
	for i, v := range vals {
		switch v := v.(type) {
		case json.Number:
			x.vals[i] = string(v)
			if significantDigits(string(v)) <= 15 {
				if f, err := strconv.ParseFloat(string(v), 64); err == nil {
					x.vals[i] = f
				}
			}
		case string, bool:
			x.vals[i] = v
		default:
			x.vals[i] = nil
		}
	}
	return x.put(x.vals)
}

func (x *xlsxTableWriter) end() error {
	if err := x.sw.Flush(); err != nil {
		return err
	}
	return x.f.Write(&convert.ContextWriter{Ctx: x.ctx, W: x.out})
}

func (x *xlsxTableWriter) close() { x.f.Close() }
