package document

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/internal/bytesize"
)

// formatName is how a format is called in messages: "Markdown", "PDF".
func formatName(id string) string {
	switch id {
	case fmtMarkdown:
		return "Markdown"
	case fmtTXT:
		return "text"
	case fmtDOCX:
		return "DOCX"
	case fmtEPUB:
		return "EPUB"
	default:
		return strings.ToUpper(id)
	}
}

// readTextInput reads a whole markup or text input (format markdown, html, txt or svg) and
// returns it as UTF-8. It refuses binary data, naming what it looks like, and inputs over max
// bytes. A UTF-8 BOM is dropped; UTF-16 with a BOM, and for HTML a charset the document
// declares, are decoded; other bytes that are not UTF-8 are read as Windows-1252, what
// such files almost always are.
func readTextInput(ctx context.Context, in *io.SectionReader, format string, max int64) ([]byte, error) {
	data, err := readInput(ctx, in, format, max)
	if err != nil {
		return nil, err
	}
	return decodeText(data, format)
}

// readRawText reads a whole text input as it is, refusing binary data and inputs over max bytes.
func readRawText(ctx context.Context, in *io.SectionReader, format string, max int64) ([]byte, error) {
	data, err := readInput(ctx, in, format, max)
	if err != nil {
		return nil, err
	}
	if err := checkNotBinary(data, formatName(format)); err != nil {
		return nil, err
	}
	return data, nil
}

// readInput reads a whole input of at most max bytes.
func readInput(ctx context.Context, in *io.SectionReader, format string, max int64) ([]byte, error) {
	if in.Size() > max {
		return nil, convert.Errorf(nil, "the %s input is %s, over the %s limit", formatName(format), bytesize.Format(in.Size()), bytesize.Format(max))
	}
	data := make([]byte, in.Size())
	if _, err := io.ReadFull(io.NewSectionReader(in, 0, in.Size()), data); err != nil {
		return nil, convert.Errorf(err, "could not read the input")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return data, nil
}

// decodeText is readTextInput's check and decoding of bytes already read.
func decodeText(data []byte, format string) ([]byte, error) {
	name := formatName(format)
	var enc encoding.Encoding
	switch {
	case bytes.HasPrefix(data, []byte("\xef\xbb\xbf")):
		data = data[3:]
	case bytes.HasPrefix(data, []byte("\xff\xfe")):
		enc = unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM)
	case bytes.HasPrefix(data, []byte("\xfe\xff")):
		enc = unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM)
	}
	if enc == nil {
		if err := checkNotBinary(data, name); err != nil {
			return nil, err
		}
		if utf8.Valid(data) {
			return data, nil
		}
		enc = charmap.Windows1252
		if format == fmtHTML {
			if e, label, _ := charset.DetermineEncoding(data[:min(len(data), 1024)], "text/html"); e != nil && label != "utf-8" {
				enc = e
			}
		}
	}
	out, err := enc.NewDecoder().Bytes(data)
	if err != nil {
		return nil, convert.Errorf(err, "input is not a valid %s file (its text encoding could not be read)", name)
	}
	if err := checkNotBinary(out, name); err != nil {
		return nil, err
	}
	return bytes.TrimPrefix(out, []byte("\xef\xbb\xbf")), nil
}

// textualSniffs are sniff's names for text; weakMagics are binary signatures short enough
// to begin ordinary text ("BMW", "MZ", "ID3 tags").
var (
	textualSniffs = map[string]bool{"text": true, "HTML": true, "SVG": true, "XML": true, "unrecognised data": true, "an empty file": true}
	weakMagics    = map[string]bool{"BMP": true, "Windows executable": true, "MP3": true}
)

// checkNotBinary refuses data that sniffs as a binary format, has NUL bytes or is mostly
// control characters, naming what it looks like.
func checkNotBinary(data []byte, name string) error {
	head := data[:min(len(data), convert.SniffLen)]
	_, what := convert.Sniff(head)
	textual := convert.LooksLikeText(head)
	if !textualSniffs[what] && !(weakMagics[what] && textual) {
		return convert.Errorf(nil, "input is not a valid %s file (it looks like %s)", name, what)
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return convert.Errorf(nil, "input is not a valid %s file (it has a NUL byte at offset %d, so it looks like binary data)", name, i)
	}
	if !textual {
		controls := 0
		for _, b := range head {
			if b < 0x20 && b != '\t' && b != '\n' && b != '\r' && b != '\f' {
				controls++
			}
		}
		if controls*10 > len(head) {
			return convert.Errorf(nil, "input is not a valid %s file (it looks like binary data)", name)
		}
	}
	return nil
}

// errTooDeep is the cause of inputs refused for their nesting.
var errTooDeep = errors.New("nesting too deep")

// plural returns "1 page" or "2 pages".
func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
