package document

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	stdhtml "html"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"

	"github.com/convsvc/convsvc/convert"
)

// markdownEngine parses CommonMark with the GitHub extensions (tables, strikethrough, task
// lists, autolinks) and renders HTML without the raw HTML the source holds: a Markdown file
// cannot smuggle a script into the output. It is safe for concurrent use, and made at first
// use, not at package initialisation.
var markdownEngine = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.GFM))
})

// Markdown inputs are checked by mdGuard before goldmark sees them: goldmark's parser takes
// time quadratic in some constructs (measured at 100 KB: 3.8 s for 100000 nested quotes, 5.3 s
// for 25000 "*a_" in one paragraph, 3.5 s for unclosed links, over 20 s for a table of 25000
// columns), so each is bounded. At these bounds the worst input of MaxMarkdownBytes parses in
// a few seconds (TestMarkdownGuard_WorstCaseTime).
const (
	// MaxMarkdownBytes bounds Markdown inputs, smaller than MaxMarkupBytes because goldmark's
	// worst cases grow with the size even within the other bounds.
	MaxMarkdownBytes = 4 << 20
	// mdMaxNesting bounds how deeply lists and quotes nest: goldmark's work per line grows
	// with the square of the depth.
	mdMaxNesting = 16
	// mdMaxIndent bounds the leading whitespace of a line, in columns: deep indentation nests
	// lists as surely as markers do.
	mdMaxIndent = 128
	// mdMaxInlineMarks bounds the emphasis, link, image, code and HTML delimiters (* _ ~ [ ] ! ` <)
	// of one paragraph, heading or table row, and mdMaxBrackets how deeply brackets nest.
	mdMaxInlineMarks = 500
	mdMaxBrackets    = 16
	// mdMaxTableColumns bounds the columns of a table and mdMaxTableCells the cells of all
	// tables together, since goldmark pads every row to the header's width.
	mdMaxTableColumns = 256
	mdMaxTableCells   = 1 << 20
)

// mdGuard refuses Markdown that would take goldmark too long, with a message that says where.
func mdGuard(src []byte) error {
	inFence := false
	var fence []byte
	marks, brackets, tableCols, cells := 0, 0, 0, 0
	for lineNo := 1; len(src) > 0; lineNo++ {
		line := src
		if i := bytes.IndexByte(src, '\n'); i >= 0 {
			line, src = src[:i], src[i+1:]
		} else {
			src = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))

		// Container markers: quotes and list items, with the whitespace between them.
		depth, col, i, newBlock := 0, 0, 0, false
		for i < len(line) {
			switch c := line[i]; {
			case c == ' ':
				col++
				i++
				continue
			case c == '\t':
				col += 4 - col%4
				i++
				continue
			case c == '>':
				depth++
				col++
				i++
				continue
			}
			if n := listMarkerLen(line[i:]); n > 0 && !inFence {
				depth++
				newBlock = true
				col += n
				i += n
				continue
			}
			break
		}
		if depth > mdMaxNesting && !inFence {
			return convert.Errorf(errTooDeep, "the Markdown nests lists or quotes more than %d levels deep (line %d)", mdMaxNesting, lineNo)
		}
		if col > mdMaxIndent && !inFence {
			return convert.Errorf(errTooDeep, "the Markdown indents line %d by %d columns, over the %d column limit", lineNo, col, mdMaxIndent)
		}
		rest := bytes.TrimRight(line[i:], " \t")

		if inFence {
			if bytes.HasPrefix(rest, fence) && len(bytes.Trim(rest, string(fence[:1]))) == 0 {
				inFence = false
			}
			continue
		}
		if f := fenceOpen(rest); f != nil {
			inFence, fence = true, f
			marks, brackets, tableCols = 0, 0, 0
			continue
		}
		if len(rest) == 0 {
			marks, brackets, tableCols = 0, 0, 0
			continue
		}
		if newBlock || rest[0] == '#' || rest[0] == '|' || tableCols > 0 {
			marks, brackets = 0, 0
		}
		if n := tableDelimiterColumns(rest); n > 0 {
			if n > mdMaxTableColumns {
				return convert.Errorf(nil, "the Markdown has a table of %d columns (line %d), over the %d column limit", n, lineNo, mdMaxTableColumns)
			}
			tableCols = n
		}
		if tableCols > 0 {
			if cells += tableCols; cells > mdMaxTableCells {
				return convert.Errorf(nil, "the Markdown's tables have more than %d cells (line %d)", mdMaxTableCells, lineNo)
			}
		}
		for j := 0; j < len(rest); j++ {
			switch rest[j] {
			case '\\':
				j++
			case '[':
				marks++
				if brackets++; brackets > mdMaxBrackets {
					return convert.Errorf(errTooDeep, "the Markdown nests brackets more than %d deep (line %d)", mdMaxBrackets, lineNo)
				}
			case ']':
				marks++
				brackets = max(brackets-1, 0)
			case '*', '_', '~', '!', '`', '<':
				marks++
			}
		}
		if marks > mdMaxInlineMarks {
			return convert.Errorf(nil, "the Markdown paragraph ending at line %d has more than %d emphasis, link and code markers; split it into smaller paragraphs", lineNo, mdMaxInlineMarks)
		}
	}
	return nil
}

// listMarkerLen returns the length of a list item marker and the space after it at the start
// of b ("- ", "12. "), or 0.
func listMarkerLen(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	n := 0
	switch c := b[0]; {
	case c == '-' || c == '+' || c == '*':
		n = 1
	case c >= '0' && c <= '9':
		for n < len(b) && n < 9 && b[n] >= '0' && b[n] <= '9' {
			n++
		}
		if n >= len(b) || b[n] != '.' && b[n] != ')' {
			return 0
		}
		n++
	default:
		return 0
	}
	if n == len(b) {
		return n
	}
	if b[n] == ' ' || b[n] == '\t' {
		return n + 1
	}
	return 0
}

// fenceOpen returns the fence (``` or ~~~, at least three) that opens a code block on line, or nil.
func fenceOpen(line []byte) []byte {
	if len(line) < 3 || line[0] != '`' && line[0] != '~' {
		return nil
	}
	n := 0
	for n < len(line) && line[n] == line[0] {
		n++
	}
	if n < 3 || line[0] == '`' && bytes.IndexByte(line[n:], '`') >= 0 {
		return nil
	}
	return line[:n]
}

// tableDelimiterColumns returns the number of columns when line is a table's delimiter row
// ("|---|:-:|"), or 0.
func tableDelimiterColumns(line []byte) int {
	if bytes.IndexByte(line, '|') < 0 && !bytes.HasPrefix(line, []byte("-")) {
		return 0
	}
	s := bytes.Trim(line, "|")
	cols := 0
	for _, cell := range bytes.Split(s, []byte("|")) {
		cell = bytes.Trim(cell, " \t:")
		if len(cell) == 0 || len(bytes.Trim(cell, "-")) != 0 {
			return 0
		}
		cols++
	}
	if cols == 1 && bytes.IndexByte(line, '|') < 0 {
		return 0 // a thematic break or setext underline
	}
	return cols
}

// parseMarkdown checks src with mdGuard and parses it.
func parseMarkdown(ctx context.Context, src []byte) (ast.Node, error) {
	if err := mdGuard(src); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return markdownEngine().Parser().Parse(text.NewReader(src)), nil
}

// readMarkdown reads, checks and parses a Markdown input.
func readMarkdown(ctx context.Context, in *io.SectionReader) (ast.Node, []byte, error) {
	src, err := readTextInput(ctx, in, fmtMarkdown, MaxMarkdownBytes)
	if err != nil {
		return nil, nil, err
	}
	doc, err := parseMarkdown(ctx, src)
	return doc, src, err
}

// renderMarkdownHTML renders a parsed document as an HTML fragment.
func renderMarkdownHTML(doc ast.Node, src []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := markdownEngine().Renderer().Render(&buf, src, doc); err != nil {
		return nil, fmt.Errorf("rendering HTML: %w", err)
	}
	return buf.Bytes(), nil
}

func markdownToHTML(ctx context.Context, in *io.SectionReader, out io.Writer, _ convert.Params) error {
	doc, src, err := readMarkdown(ctx, in)
	if err != nil {
		return err
	}
	body, err := renderMarkdownHTML(doc, src)
	if err != nil {
		return err
	}
	return writeHTMLPage(out, markdownTitle(doc, src), body)
}

func markdownToText(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
	doc, src, err := readMarkdown(ctx, in)
	if err != nil {
		return err
	}
	reportTextLosses(doc, "Markdown", p)
	return writeMarkdownText(ctx, out, doc, src)
}

// htmlPageStyle is the style sheet of the HTML pages written from Markdown, text and DOCX.
const htmlPageStyle = `body{font-family:sans-serif;line-height:1.5;max-width:48em;margin:2em auto;padding:0 1em}
pre{background:#f5f5f5;padding:.75em;overflow:auto}
table{border-collapse:collapse}th,td{border:1px solid #bbb;padding:.25em .6em}
blockquote{border-left:3px solid #bbb;margin-left:0;padding-left:1em;color:#555}`

// writeHTMLPage writes a complete UTF-8 HTML page around a body fragment.
func writeHTMLPage(w io.Writer, title string, body []byte) error {
	if title == "" {
		title = "Document"
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>%s</title>\n<style>\n%s\n</style>\n</head>\n<body>\n",
		stdhtml.EscapeString(title), htmlPageStyle)
	bw.Write(body)
	if len(body) > 0 && body[len(body)-1] != '\n' {
		bw.WriteByte('\n')
	}
	bw.WriteString("</body>\n</html>\n")
	return bw.Flush()
}

// markdownTitle returns the text of the first heading, for titles and metadata.
func markdownTitle(doc ast.Node, src []byte) string {
	var title string
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if h, ok := n.(*ast.Heading); ok && entering {
			title = strings.TrimSpace(strings.ReplaceAll(mdInlineText(h, src), "\n", " "))
			return ast.WalkStop, nil
		}
		return ast.WalkContinue, nil
	})
	return title
}

// mdTextValue turns a Text node's source bytes into text the way goldmark's HTML writer reads
// them (backslash escapes, entities, NUL), without the HTML escaping.
func mdTextValue(b []byte) string {
	if bytes.IndexByte(b, '\\') < 0 && bytes.IndexByte(b, '&') < 0 && bytes.IndexByte(b, 0) < 0 {
		return string(b)
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	gmhtml.DefaultWriter.Write(w, b)
	w.Flush()
	return stdhtml.UnescapeString(buf.String())
}

// mdInlineText returns the plain text of a node's inline content: hard line breaks become
// newlines, soft ones spaces; links keep their text, images their description.
func mdInlineText(n ast.Node, src []byte) string {
	var b strings.Builder
	appendInlineText(&b, n, src, false)
	return b.String()
}

func appendInlineText(b *strings.Builder, n ast.Node, src []byte, withURLs bool) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			if c.IsRaw() {
				b.Write(c.Value(src))
			} else {
				b.WriteString(mdTextValue(c.Value(src)))
			}
			switch {
			case c.HardLineBreak():
				b.WriteByte('\n')
			case c.SoftLineBreak():
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		case *ast.CodeSpan:
			for t := c.FirstChild(); t != nil; t = t.NextSibling() {
				if s, ok := t.(*ast.Text); ok {
					b.Write(bytes.ReplaceAll(s.Value(src), []byte("\n"), []byte(" ")))
				} else if s, ok := t.(*ast.String); ok {
					b.Write(s.Value)
				}
			}
		case *ast.AutoLink:
			b.Write(c.Label(src))
		case *ast.Link:
			start := b.Len()
			appendInlineText(b, c, src, withURLs)
			dest := string(c.Destination)
			if withURLs && dest != "" && !strings.HasPrefix(dest, "#") && !scriptLink(dest) && !strings.HasSuffix(b.String()[start:], dest) {
				b.WriteString(" (" + dest + ")")
			}
		case *ast.RawHTML:
			// omitted, as in the HTML output
		case *east.TaskCheckBox:
			if c.IsChecked {
				b.WriteString("[x] ")
			} else {
				b.WriteString("[ ] ")
			}
		default:
			appendInlineText(b, c, src, withURLs)
		}
	}
}

// mdTextWriter writes a parsed Markdown document as plain text: headings underlined, list
// markers and quote prefixes kept, tables aligned in columns, code indented.
type mdTextWriter struct {
	ctx context.Context
	src []byte
	w   *bufio.Writer
	// blank is set when the next block needs a blank line before it.
	blank bool
	err   error
}

func writeMarkdownText(ctx context.Context, out io.Writer, doc ast.Node, src []byte) error {
	w := &mdTextWriter{ctx: ctx, src: src, w: bufio.NewWriterSize(&convert.ContextWriter{Ctx: ctx, W: out}, 64<<10)}
	w.blocks(doc, "", "")
	if w.err != nil {
		return w.err
	}
	return w.w.Flush()
}

// line writes one line with a prefix, trimming trailing spaces.
func (w *mdTextWriter) line(prefix, s string) {
	w.w.WriteString(strings.TrimRight(prefix+s, " "))
	w.w.WriteByte('\n')
}

// lines writes text that may hold newlines: first prefixes the first line, rest the others.
func (w *mdTextWriter) lines(first, rest, s string) {
	w.sep(rest)
	for i, l := range strings.Split(s, "\n") {
		if i == 0 {
			w.line(first, l)
		} else {
			w.line(rest, l)
		}
	}
}

// sep writes the blank line a block asked for after it, prefixed by the enclosing quotes.
func (w *mdTextWriter) sep(prefix string) {
	if w.blank {
		w.line(prefix, "")
		w.blank = false
	}
}

// blocks writes the children of n; the first line of the first child gets prefix first.
func (w *mdTextWriter) blocks(n ast.Node, first, rest string) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if w.err = w.ctx.Err(); w.err != nil {
			return
		}
		w.sep(strings.TrimRight(rest, " "))
		w.block(c, first, rest)
		first = rest
	}
}

func (w *mdTextWriter) block(n ast.Node, first, rest string) {
	switch n := n.(type) {
	case *ast.Heading:
		t := strings.ReplaceAll(mdInlineText(n, w.src), "\n", " ")
		w.lines(first, rest, t)
		if n.Level <= 2 {
			u := "="
			if n.Level == 2 {
				u = "-"
			}
			w.line(rest, strings.Repeat(u, max(3, utf8.RuneCountInString(t))))
		}
		w.blank = true
	case *ast.Paragraph:
		w.lines(first, rest, mdInlineTextURLs(n, w.src))
		w.blank = true
	case *ast.TextBlock:
		w.lines(first, rest, mdInlineTextURLs(n, w.src))
		w.blank = false
	case *ast.ThematicBreak:
		w.lines(first, rest, "----------")
		w.blank = true
	case *ast.CodeBlock, *ast.FencedCodeBlock:
		var b strings.Builder
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			b.Write(seg.Value(w.src))
		}
		w.lines(first+"    ", rest+"    ", strings.TrimRight(b.String(), "\n"))
		w.blank = true
	case *ast.Blockquote:
		w.blocks(n, first+"> ", rest+"> ")
		w.blank = true
	case *ast.List:
		num := n.Start
		for item := n.FirstChild(); item != nil; item = item.NextSibling() {
			marker := "- "
			if n.IsOrdered() {
				marker = strconv.Itoa(num) + ". "
				num++
			}
			pad := strings.Repeat(" ", len(marker))
			if item.FirstChild() == nil {
				w.lines(first, rest, strings.TrimRight(marker, " "))
			}
			w.blocks(item, first+marker, rest+pad)
			first = rest
			w.blank = !n.IsTight
		}
		_, nested := n.Parent().(*ast.ListItem)
		w.blank = !nested || !n.IsTight
	case *east.Table:
		w.table(n, first, rest)
		w.blank = true
	case *ast.HTMLBlock:
		// omitted, as in the HTML output
	default:
		w.blocks(n, first, rest)
	}
}

// mdInlineTextURLs is mdInlineText with link targets after link texts that do not show them.
func mdInlineTextURLs(n ast.Node, src []byte) string {
	var b strings.Builder
	appendInlineText(&b, n, src, true)
	return b.String()
}

// table writes a table as aligned columns separated by " | ", the header underlined.
func (w *mdTextWriter) table(t *east.Table, first, rest string) {
	var rows [][]string
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		var row []string
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			row = append(row, strings.ReplaceAll(mdInlineTextURLs(c, w.src), "\n", " "))
		}
		rows = append(rows, row)
	}
	writeTextTable(w, first, rest, rows, true)
}

// writeTextTable aligns rows of cells in columns; with header the first row is underlined.
func writeTextTable(w *mdTextWriter, first, rest string, rows [][]string, header bool) {
	var widths []int
	for _, row := range rows {
		for i, c := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	format := func(row []string) string {
		var b strings.Builder
		for i := range widths {
			c := ""
			if i < len(row) {
				c = row[i]
			}
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(c)
			if i < len(widths)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)))
			}
		}
		return b.String()
	}
	for i, row := range rows {
		w.lines(first, rest, format(row))
		first = rest
		if i == 0 && header {
			var b strings.Builder
			for j, wd := range widths {
				if j > 0 {
					b.WriteString("-+-")
				}
				b.WriteString(strings.Repeat("-", max(wd, 1)))
			}
			w.line(rest, b.String())
		}
	}
}
