package data

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/zipxml"
)

// registerVerifiers adds the output checks of the data formats. The output is re-read with a
// scanner that shares no code with the writers and counts records as it checks the
// structure: CSV and TSV rows (quotes closed, the header row not counted), NDJSON lines (each
// one JSON value, brackets and strings closed), JSON (brackets and strings closed; a top-level
// array's elements are its records). Where both sides count records (CSV, TSV, NDJSON, a JSON
// array), the output holds as many as the input. XLSX is a zip of well-formed XML with its
// workbook. YAML, TOML and XML have no check: docs/reliability.md says why.
func registerVerifiers(c *convert.Catalog) {
	for _, id := range []string{"csv", "tsv", "ndjson", "json"} {
		c.AddVerifier(id, verifyRecords(id))
	}
	c.AddVerifier("xlsx", func(ctx context.Context, out *io.SectionReader, _ convert.Check) error {
		return zipxml.Check(ctx, out, "[Content_Types].xml", "xl/workbook.xml")
	})
}

// verifyRecords checks an output of format id and compares its records with the input's.
func verifyRecords(id string) convert.Verifier {
	return func(ctx context.Context, out *io.SectionReader, chk convert.Check) error {
		got, err := countRecords(ctx, id, out)
		if err != nil {
			return err
		}
		if got < 0 || chk.Input == nil {
			return nil
		}
		switch chk.InputFormat {
		case "csv", "tsv", "ndjson", "json":
		default:
			return nil // records of XLSX, YAML, TOML and XML are not counted
		}
		want, err := countRecords(ctx, chk.InputFormat, chk.Input)
		if err != nil || want < 0 {
			return nil // the converter read the input; a count it cannot make is no fault of the output
		}
		if got != want {
			return fmt.Errorf("the output holds %d records where the input holds %d", got, want)
		}
		return nil
	}
}

// countRecords scans r as format id: CSV and TSV data rows, NDJSON values, a JSON array's
// elements (-1 for JSON that is not an array). A structural fault is an error.
func countRecords(ctx context.Context, id string, r *io.SectionReader) (int64, error) {
	return countRecordsBuf(ctx, id, r, 64<<10)
}

// countRecordsBuf is countRecords reading chunks of up to size bytes (tests make them small,
// so every state crosses a chunk's edge).
func countRecordsBuf(ctx context.Context, id string, r *io.SectionReader, size int) (int64, error) {
	c := &chunks{r: &convert.ContextReader{Ctx: ctx, R: io.NewSectionReader(r, 0, r.Size())}, buf: make([]byte, size)}
	switch id {
	case "csv":
		return countDelimited(c, ',')
	case "tsv":
		return countDelimited(c, '\t')
	case "ndjson":
		return countNDJSON(c)
	default:
		return countJSON(c)
	}
}

// chunks hands out a reader's bytes a buffer at a time. The scanners loop over each chunk
// themselves: a call per byte (a ByteReader, a scanner's feed) was most of a check that scans
// a whole output (docs/benchmarks.md, "Output checks").
type chunks struct {
	r   io.Reader
	buf []byte
	err error
}

// next returns the next bytes read, valid until the next call, or the reader's error (io.EOF
// at the end) once none are left.
func (c *chunks) next() ([]byte, error) {
	for c.err == nil {
		var n int
		n, c.err = c.r.Read(c.buf)
		if n > 0 {
			return c.buf[:n], nil
		}
	}
	return nil, c.err
}

// countDelimited counts the rows of a CSV or TSV after its header: line ends outside quotes
// close a row, empty lines are no rows. Every row has the header's number of fields and the
// last one ends its line, as the writers write them; a quote left open is an error. TSV has
// no quoting.
func countDelimited(r *chunks, sep byte) (int64, error) {
	quoted, inRow := false, false
	var rows int64
	fields, width := 1, 0
	var last byte
	var special [256]bool
	special[sep], special['\n'], special['\r'] = true, true, true
	special['"'] = sep == ','
	endRow := func() error {
		if rows == 0 {
			width = fields
		} else if fields != width {
			return fmt.Errorf("row %d has %d fields where the header has %d: the table was cut short", rows+1, fields, width)
		}
		rows++
		fields = 1
		return nil
	}
	for {
		p, err := r.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		last = p[len(p)-1]
		for i := 0; i < len(p); i++ {
			if quoted { // inRow since the quote opened: on to the quote that closes it
				j := bytes.IndexByte(p[i:], '"')
				if j < 0 {
					break
				}
				i += j
				quoted = false
				continue
			}
			b := p[i]
			if !special[b] {
				inRow = true
				continue
			}
			switch b {
			case '"':
				quoted, inRow = true, true
			case '\n':
				if inRow {
					if err := endRow(); err != nil {
						return 0, err
					}
				}
				inRow = false
			case '\r':
			default: // sep
				fields++
				inRow = true
			}
		}
	}
	if quoted {
		return 0, errors.New("a quoted field is left open at the end: the table was cut short")
	}
	if rows == 0 && !inRow {
		return 0, nil // an empty table: no header, no rows
	}
	if inRow || last != '\n' {
		return 0, errors.New("the last row does not end its line: the table was cut short")
	}
	return rows - 1, nil
}

// jsonScanner follows JSON's strings and brackets.
type jsonScanner struct {
	depth    int
	str, esc bool
	elems    int64 // elements of the top-level array
	seen     bool  // a value has started at depth 1
	array    bool  // the top level is an array
	top      bool  // a top-level value has started
}

// scan takes the next bytes, as feed takes each of them.
func (s *jsonScanner) scan(p []byte) error {
	for i := 0; i < len(p); i++ {
		if s.str {
			if s.esc {
				s.esc = false
				continue
			}
			for i < len(p) && p[i] != '"' && p[i] != '\\' {
				i++
			}
			if i == len(p) {
				return nil
			}
			if p[i] == '\\' {
				s.esc = true
			} else {
				s.str = false
			}
			continue
		}
		b := p[i]
		if s.depth > 0 && (s.seen || s.depth != 1 || !s.array) {
			// Inside a value under way: feed's cases without the ones that cannot apply.
			switch b {
			case '"':
				s.str = true
			case '[', '{':
				s.depth++
			case ']', '}':
				s.depth--
			case ',':
				if s.depth == 1 {
					s.seen = false
				}
			}
			continue
		}
		if err := s.feed(b); err != nil {
			return err
		}
	}
	return nil
}

// feed takes one byte outside a string's body; an error is a bracket that does not match.
func (s *jsonScanner) feed(b byte) error {
	switch b {
	case ' ', '\t', '\n', '\r':
		return nil
	}
	if s.depth == 0 {
		if s.top {
			return errors.New("text follows the top-level value")
		}
		s.top = true
		s.array = b == '['
	}
	if s.depth == 1 && s.array && !s.seen && b != ']' && b != ',' {
		s.seen = true
		s.elems++
	}
	switch b {
	case '"':
		s.str = true
	case '[', '{':
		s.depth++
	case ']', '}':
		s.depth--
		if s.depth < 0 {
			return errors.New("a bracket closes that never opened")
		}
	case ',':
		if s.depth == 1 {
			s.seen = false
		}
	}
	return nil
}

// whole reports whether every string and bracket was closed.
func (s *jsonScanner) whole() error {
	if s.str || s.depth != 0 {
		return errors.New("a string or bracket is left open at the end: the JSON was cut short")
	}
	return nil
}

// countJSON checks one JSON value's strings and brackets; it returns a top-level array's
// elements, or -1 for another value.
func countJSON(r *chunks) (int64, error) {
	var s jsonScanner
	for {
		p, err := r.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		if err := s.scan(p); err != nil {
			return 0, err
		}
	}
	if err := s.whole(); err != nil {
		return 0, err
	}
	if !s.top {
		return 0, errors.New("the JSON is empty")
	}
	if !s.array {
		return -1, nil
	}
	return s.elems, nil
}

// countNDJSON counts the non-blank lines of NDJSON, each a JSON value whose strings and
// brackets close on its line.
func countNDJSON(r *chunks) (int64, error) {
	var n int64
	var s jsonScanner
	endLine := func() error {
		if s.top {
			if err := s.whole(); err != nil {
				return fmt.Errorf("line %d: %w", n+1, err)
			}
			n++
		}
		s = jsonScanner{}
		return nil
	}
	for {
		p, err := r.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		for len(p) > 0 {
			line := p
			j := bytes.IndexByte(p, '\n')
			if j >= 0 {
				line = p[:j]
			}
			if err := s.scan(line); err != nil {
				return 0, fmt.Errorf("line %d: %w", n+1, err)
			}
			if j < 0 {
				break
			}
			if err := endLine(); err != nil {
				return 0, err
			}
			p = p[j+1:]
		}
	}
	if err := endLine(); err != nil {
		return 0, err
	}
	return n, nil
}
