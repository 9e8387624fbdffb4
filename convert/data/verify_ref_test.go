package data

// The byte-at-a-time record scanners the output checks used before they scanned whole chunks
// (verify.go): the reference FuzzCountRecords and TestCountRecords_SameAsByteScanner compare
// the chunk scanners with.

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/convsvc/convsvc/convert"
)

// refCountRecords scans r as format id: CSV and TSV data rows, NDJSON values, a JSON array's
// elements (-1 for JSON that is not an array). A structural fault is an error.
func refCountRecords(ctx context.Context, id string, r *io.SectionReader) (int64, error) {
	br := &refChunkReader{r: &convert.ContextReader{Ctx: ctx, R: io.NewSectionReader(r, 0, r.Size())}, buf: make([]byte, 64<<10)}
	switch id {
	case "csv":
		return refCountDelimited(br, ',')
	case "tsv":
		return refCountDelimited(br, '\t')
	case "ndjson":
		return refCountNDJSON(br)
	default:
		return refCountJSON(br)
	}
}

// refChunkReader hands out a reader's bytes one at a time from a buffer it refills: ReadByte
// without bufio's per-call checks, the scanners' hot loop.
type refChunkReader struct {
	r    io.Reader
	buf  []byte
	i, n int
	err  error
}

// ReadByte returns the next byte, or the reader's error (io.EOF at the end).
func (c *refChunkReader) ReadByte() (byte, error) {
	if c.i < c.n {
		b := c.buf[c.i]
		c.i++
		return b, nil
	}
	return c.refill()
}

func (c *refChunkReader) refill() (byte, error) {
	for c.err == nil {
		c.n, c.err = c.r.Read(c.buf)
		c.i = 0
		if c.n > 0 {
			c.i = 1
			return c.buf[0], nil
		}
	}
	return 0, c.err
}

// refCountDelimited counts the rows of a CSV or TSV after its header: line ends outside quotes
// close a row, empty lines are no rows. Every row has the header's number of fields and the
// last one ends its line, as the writers write them; a quote left open is an error. TSV has
// no quoting.
func refCountDelimited(r *refChunkReader, sep byte) (int64, error) {
	quoted, inRow := false, false
	var rows int64
	fields, width := 1, 0
	var last byte
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
		b, err := r.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		last = b
		switch {
		case b == '"' && sep == ',':
			quoted = !quoted
			inRow = true
		case b == sep && !quoted:
			fields++
			inRow = true
		case b == '\n' && !quoted:
			if inRow {
				if err := endRow(); err != nil {
					return 0, err
				}
			}
			inRow = false
		case b == '\r' && !quoted:
		default:
			inRow = true
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

// refJSONScanner follows JSON's strings and brackets byte by byte.
type refJSONScanner struct {
	depth    int
	str, esc bool
	elems    int64 // elements of the top-level array
	seen     bool  // a value has started at depth 1
	array    bool  // the top level is an array
	top      bool  // a top-level value has started
}

// feed takes one byte; an error is a bracket that does not match.
func (s *refJSONScanner) feed(b byte) error {
	if s.str {
		switch {
		case s.esc:
			s.esc = false
		case b == '\\':
			s.esc = true
		case b == '"':
			s.str = false
		}
		return nil
	}
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
func (s *refJSONScanner) whole() error {
	if s.str || s.depth != 0 {
		return errors.New("a string or bracket is left open at the end: the JSON was cut short")
	}
	return nil
}

// refCountJSON checks one JSON value's strings and brackets; it returns a top-level array's
// elements, or -1 for another value.
func refCountJSON(r *refChunkReader) (int64, error) {
	var s refJSONScanner
	for {
		b, err := r.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		if err := s.feed(b); err != nil {
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

// refCountNDJSON counts the non-blank lines of NDJSON, each a JSON value whose strings and
// brackets close on its line.
func refCountNDJSON(r *refChunkReader) (int64, error) {
	var n int64
	var s refJSONScanner
	for {
		b, err := r.ReadByte()
		if errors.Is(err, io.EOF) || (err == nil && b == '\n') {
			if s.top {
				if werr := s.whole(); werr != nil {
					return 0, fmt.Errorf("line %d: %w", n+1, werr)
				}
				if s.depth == 0 && !s.array && !s.top {
					break
				}
				n++
			}
			s = refJSONScanner{}
			if err != nil {
				break
			}
			continue
		}
		if err != nil {
			return 0, err
		}
		if err := s.feed(b); err != nil {
			return 0, fmt.Errorf("line %d: %w", n+1, err)
		}
	}
	return n, nil
}
