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
			err = rootClosed(cr)
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

// rootClosed reads a large XML part to its end and wants its root element, opened in its
// first kilobytes, closed by its last bytes.
func rootClosed(r io.Reader) error {
	head := make([]byte, 64<<10)
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
	if _, err := io.Copy(tail, r); err != nil {
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

// wellFormed parses r as XML to its end: tags balanced, one root element.
func wellFormed(r io.Reader) error {
	d := xml.NewDecoder(r)
	d.Strict = true
	roots := 0
	depth := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("not well-formed XML: %w", err)
		}
		switch tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
			}
			depth++
		case xml.EndElement:
			depth--
		}
	}
	if depth != 0 || roots != 1 {
		return fmt.Errorf("not well-formed XML: %d root elements, %d left open", roots, depth)
	}
	return nil
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
