// Package zipxml checks that a file is a zip whose XML parts are well-formed: the output
// check of EPUB and XLSX (convert.Verifier), read with archive/zip and encoding/xml, which
// share no code with the writers.
package zipxml

import (
	"archive/zip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/convsvc/convsvc/convert"
)

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
		cr := &convert.ContextReader{Ctx: ctx, R: r}
		if xmlExts[strings.ToLower(path.Ext(f.Name))] {
			err = wellFormed(cr)
			if err == nil {
				_, err = io.Copy(io.Discard, cr) // to the end, for the CRC
			}
		} else {
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
