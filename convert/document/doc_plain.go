package document

import (
	"bytes"
	"context"
	stdhtml "html"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/convsvc/convsvc/convert"
)

// textTitle is the first non-blank line of a text, shortened, for titles.
func textTitle(text string) string {
	for _, l := range strings.Split(text, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			if utf8.RuneCountInString(l) > 80 {
				l = string([]rune(l)[:79]) + "…"
			}
			return l
		}
	}
	return ""
}

// normalizeNewlines turns CRLF and CR line ends into LF.
func normalizeNewlines(b []byte) []byte {
	if bytes.IndexByte(b, '\r') < 0 {
		return b
	}
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	return bytes.ReplaceAll(b, []byte("\r"), []byte("\n"))
}

// textToHTML writes plain text as an HTML page: blank lines separate paragraphs, other line
// ends are kept as <br>, and everything is escaped.
func textToHTML(ctx context.Context, in *io.SectionReader, out io.Writer, _ convert.Params) error {
	src, err := readTextInput(ctx, in, fmtTXT, MaxMarkupBytes)
	if err != nil {
		return err
	}
	text := string(normalizeNewlines(src))
	var body strings.Builder
	for _, para := range strings.Split(strings.ReplaceAll(text, "\f", "\n\n"), "\n\n") {
		para = strings.Trim(para, "\n")
		if strings.TrimSpace(para) == "" {
			continue
		}
		lines := strings.Split(para, "\n")
		for i, l := range lines {
			lines[i] = stdhtml.EscapeString(strings.TrimRight(l, " \t"))
		}
		body.WriteString("<p>")
		body.WriteString(strings.Join(lines, "<br>\n"))
		body.WriteString("</p>\n")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return writeHTMLPage(out, textTitle(text), []byte(body.String()))
}

// pdfTextSize is the font size of plain text in PDFs.
const pdfTextSize = 9.5

// textToPDF sets plain text in monospace, so that columns and indentation survive; long lines
// wrap at a space where there is one, and form feeds start new pages.
func textToPDF(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
	src, err := readTextInput(ctx, in, fmtTXT, MaxMarkupBytes)
	if err != nil {
		return err
	}
	text := string(normalizeNewlines(src))
	d, err := newPDFDoc(ctx, p, textTitle(text))
	if err != nil {
		return err
	}
	defer d.release()
	st := inlineStyle{mono: true, size: pdfTextSize, color: 0x111111}
	lh := pdfTextSize * 1.3
	perLine := max(1, int((d.right-d.left)/st.font().width("0", st.size)))
	var at int64 // the bytes of text the pages laid out hold
	d.consumed = func() (int64, int64) { return at, int64(len(text)) }
	for pi, page := range strings.Split(strings.TrimRight(text, "\n\f"), "\f") {
		if pi > 0 {
			d.newPage()
		}
		for i, line := range strings.Split(strings.TrimPrefix(page, "\n"), "\n") {
			at += int64(len(line)) + 1
			if i%256 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			for _, part := range wrapMono(pdfSafeText(strings.ReplaceAll(line, "\t", "    ")), perLine) {
				d.ensure(lh)
				// Characters the monospaced face lacks come from the fallback faces, which
				// are wider: a part may take more than one line.
				for i, ws := range d.preLines(part, st, d.right-d.left) {
					if i > 0 {
						d.ensure(lh)
					}
					if len(ws) > 0 {
						d.drawLine(ws, d.left, d.y, lh, d.right-d.left, "L")
					}
					d.y += lh
				}
			}
			if d.err != nil {
				return d.err
			}
		}
	}
	return d.finish(out)
}

// wrapMono cuts a line into parts of at most n characters, after the last space of a part
// when that space is in the part's second half.
func wrapMono(line string, n int) []string {
	runes := []rune(strings.TrimRight(line, " "))
	if len(runes) <= n {
		return []string{string(runes)}
	}
	var parts []string
	for len(runes) > n {
		cut := n
		for i := n; i > n/2; i-- {
			if runes[i] == ' ' {
				cut = i
				break
			}
		}
		parts = append(parts, strings.TrimRight(string(runes[:cut]), " "))
		runes = runes[cut:]
		for len(runes) > 0 && runes[0] == ' ' {
			runes = runes[1:]
		}
	}
	if len(runes) > 0 {
		parts = append(parts, string(runes))
	}
	return parts
}
