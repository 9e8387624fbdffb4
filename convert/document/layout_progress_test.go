package document

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/convtest"
	"github.com/convsvc/convsvc/internal/cputime"
)

// progressMarkdown is a Markdown document of n sections, each a heading, two paragraphs, a
// list and a code block: about a page each.
func progressMarkdown(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "# Section %d\n\n", i)
		for range 2 {
			b.WriteString(strings.Repeat("Words laid out in lines across the page, wrapped at spaces. ", 12) + "\n\n")
		}
		for k := range 6 {
			fmt.Fprintf(&b, "- item %d of section %d with some words\n", k, i)
		}
		b.WriteString("\n```\n" + strings.Repeat("code line with a few tokens();\n", 12) + "```\n\n")
	}
	return b.String()
}

// TestLayoutProgress_Pages: Markdown, HTML and plain text laid out as PDF report, page by
// page, how much of their input the pages laid out hold, within the layout's share
// (layoutShare); each sequence starts at 0, strictly grows and has a value per few pages.
func TestLayoutProgress_Pages(t *testing.T) {
	c := testCatalog(convert.Limits{})
	md := progressMarkdown(8)
	var html strings.Builder
	html.WriteString("<html><body>")
	for i := range 8 {
		fmt.Fprintf(&html, "<h1>Section %d</h1><p>%s</p><p>%s</p><ul>", i, strings.Repeat("Words laid out in lines across the page. ", 20), strings.Repeat("More words in a second paragraph. ", 20))
		for k := range 6 {
			fmt.Fprintf(&html, "<li>item %d</li>", k)
		}
		html.WriteString("</ul><pre>" + strings.Repeat("code line with a few tokens();\n", 12) + "</pre>")
	}
	html.WriteString("</body></html>")
	text := strings.Repeat("A line of plain text, set in monospace as it is.\n", 500) // about 8 pages
	for _, tc := range []struct {
		from string
		in   string
	}{{fmtMarkdown, md}, {fmtHTML, html.String()}, {fmtTXT, text}} {
		got := convtest.Progress(t, c, tc.from, fmtPDF, convert.Options{}, []byte(tc.in))
		t.Logf("%s -> pdf: %d reports %v", tc.from, len(got), got)
		convtest.CheckProgress(t, tc.from+" -> pdf", got, 4, [2]float64{0, layoutShare})
		if last := got[len(got)-1]; last != layoutShare {
			t.Fatalf("%s -> pdf: last report %v, want %v (every page laid out)", tc.from, last, layoutShare)
		}
	}
}

// TestLayoutProgress_Share measures layoutShare: how much of a Markdown to PDF conversion's
// time its layout takes, the rest being the PDF's output. It runs only with CONVSVC_MEASURE=1.
func TestLayoutProgress_Share(t *testing.T) {
	if os.Getenv("CONVSVC_MEASURE") == "" {
		t.Skip("set CONVSVC_MEASURE=1 to measure the layout's share")
	}
	src := []byte(progressMarkdown(150))
	for range 3 {
		start := cputime.Self()
		doc, err := parseMarkdown(t.Context(), src)
		if err != nil {
			t.Fatal(err)
		}
		parsed := cputime.Self() - start
		d, err := newPDFDoc(t.Context(), convert.Params{}, "")
		if err != nil {
			t.Fatal(err)
		}
		m := &mdPDF{pdfDoc: d, src: src}
		m.blocks(doc)
		laid := cputime.Self() - start - parsed
		var out strings.Builder
		if err := d.finish(&out); err != nil {
			t.Fatal(err)
		}
		all := cputime.Self() - start
		t.Logf("%d KB, %d pages, CPU: parse %v, layout %v (%.0f%%), output %v", len(src)>>10, d.f.PageCount(), parsed, laid, 100*float64(laid)/float64(all), all-laid-parsed)
	}
}
