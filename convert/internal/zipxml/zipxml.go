// Package zipxml checks that a file is a zip whose XML parts are well-formed: the output
// check of EPUB and XLSX (convert.Verifier), read with archive/zip and encoding/xml, which
// share no code with the writers. Every part is read to its end (its CRC-32); the package
// parts (manifests, relationships, container, workbook) up to FullParseBytes are parsed as XML
// to the end, content parts (worksheets, chapters: their parse cost 40-90% of the conversion,
// docs/benchmarks.md) must open their root element and close it at their end.
package zipxml

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// FullParseBytes is the largest XML part parsed to its end.
const FullParseBytes = 64 << 10

// packageExts are the parts that describe the package (manifests, relationships, the EPUB
// container and navigation): parsed to their end whatever their size up to FullParseBytes,
// while content parts (.xhtml chapters, worksheets) get the root check.
var packageExts = map[string]bool{".rels": true, ".opf": true, ".ncx": true}

// isPackagePart reports whether a part describes the package rather than holding content.
func isPackagePart(name string) bool {
	return packageExts[strings.ToLower(path.Ext(name))] || name == "[Content_Types].xml" ||
		strings.HasPrefix(name, "META-INF/") || name == "xl/workbook.xml"
}

// xmlExts are the parts parsed as XML, by extension.
var xmlExts = map[string]bool{".xml": true, ".rels": true, ".xhtml": true, ".opf": true, ".ncx": true, ".svg": true}

// Check opens out as a zip, reads every entry to its end (archive/zip compares each CRC-32),
// parses every XML part to its end, and wants each of the required names present.
func Check(ctx context.Context, out *io.SectionReader, required ...string) error {
	zr, err := zip.NewReader(out, out.Size())
	if err != nil {
		return fmt.Errorf("the zip does not open: %w", err)
	}
	seen := make(map[string]bool, len(zr.File))
	// One buffer for every part: a chapter's or a worksheet's head, then its copy to the end.
	// Allocating them per part (64 KiB and 32 KiB, zeroed) was most of an EPUB's check.
	var buf []byte
	for _, f := range zr.File {
		if err := ctx.Err(); err != nil {
			return err
		}
		seen[f.Name] = true
		if f.FileInfo().IsDir() {
			continue
		}
		r, err := f.Open()
		if err != nil {
			return fmt.Errorf("part %q does not open: %w", f.Name, err)
		}
		cr := ctxReader{ctx: ctx, r: r}
		switch {
		case xmlExts[strings.ToLower(path.Ext(f.Name))] && isPackagePart(f.Name) && f.UncompressedSize64 <= FullParseBytes:
			err = wellFormed(cr)
			if err == nil {
				_, err = io.Copy(io.Discard, cr) // to the end, for the CRC
			}
		case xmlExts[strings.ToLower(path.Ext(f.Name))]:
			if buf == nil {
				buf = make([]byte, headBytes)
			}
			// The directory's size only sizes the head's read: a wrong one reads less or more.
			err = rootClosed(cr, buf[:min(uint64(len(buf)), f.UncompressedSize64+1)], buf)
		default:
			_, err = io.Copy(io.Discard, cr)
		}
		r.Close()
		if err != nil {
			return fmt.Errorf("part %q: %w", f.Name, err)
		}
	}
	for _, name := range required {
		if !seen[name] {
			return fmt.Errorf("the part %q is missing", name)
		}
	}
	return nil
}

// headBytes is how much of a content part's beginning rootClosed reads for its root element.
const headBytes = 64 << 10

// rootClosed reads a large XML part to its end and wants its root element, opened in its
// first kilobytes (read into head, up to headBytes), closed by its last bytes; buf is the
// buffer it copies the rest through, which may be head's.
func rootClosed(r io.Reader, head, buf []byte) error {
	n, err := io.ReadFull(r, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	head = head[:n]
	d := xml.NewDecoder(bytes.NewReader(head))
	var root string
	for root == "" {
		tok, err := d.RawToken()
		if err != nil {
			return fmt.Errorf("no root element in its first %d bytes: %w", n, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			root = se.Name.Local
			if se.Name.Space != "" {
				root = se.Name.Space + ":" + root
			}
		}
	}
	tail := &tailBuffer{}
	tail.Write(head)
	if _, err := io.CopyBuffer(tail, r, buf); err != nil {
		return err
	}
	end := bytes.TrimRight(tail.b, " \t\r\n")
	if !bytes.HasSuffix(end, []byte("</"+root+">")) {
		return fmt.Errorf("not well-formed XML: the root element <%s> is not closed at the end", root)
	}
	return nil
}

// tailBuffer keeps the last 256 bytes written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p[max(0, len(p)-256):]...)
	if len(t.b) > 256 {
		t.b = append(t.b[:0], t.b[len(t.b)-256:]...)
	}
	return len(p), nil
}

// wellFormed parses r as XML to its end: tags balanced, one root element. It reads raw tokens
// and matches each end tag to its start itself: Token's namespace translation, which also
// matches them, cost a third of the parse.
func wellFormed(r io.Reader) error {
	d := xml.NewDecoder(r)
	d.Strict = true
	roots := 0
	var open []xml.Name
	for {
		tok, err := d.RawToken()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("not well-formed XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(open) == 0 {
				roots++
			}
			open = append(open, t.Name)
		case xml.EndElement:
			if len(open) == 0 || open[len(open)-1] != t.Name {
				return fmt.Errorf("not well-formed XML: </%s> closes no open element of that name", qualified(t.Name))
			}
			open = open[:len(open)-1]
		}
	}
	if len(open) != 0 || roots != 1 {
		return fmt.Errorf("not well-formed XML: %d root elements, %d left open", roots, len(open))
	}
	return nil
}

// qualified is a raw name as it was written, prefix:local.
func qualified(n xml.Name) string {
	if n.Space == "" {
		return n.Local
	}
	return n.Space + ":" + n.Local
}

// ctxReader stops reading once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
