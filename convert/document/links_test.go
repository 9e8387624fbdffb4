package document

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/yuin/goldmark/ast"

	"github.com/convsvc/convsvc/convert"
)

// scriptLinkMarkers are the payloads of linkHTML, linkMarkdown and linkDOCX's script and
// document links (spelled as a browser still follows them: any case, a tab inside the
// scheme, leading spaces); none may reach any output. Their web link must.
var scriptLinkMarkers = []string{"alert(1)", "alert(2)", "alert(3)", "msgbox", "PHNjcmlwdD4", "etc/shadow"}

const linkHTML = `<html><body><h1>Links</h1><p>
<a href="javascript:alert(1)">js one</a>
<a href="  JaVa&#09;Script:alert(2)">js two</a>
<a href="&#x0a;javascript:alert(3)">js three</a>
<a href="vbscript:msgbox">vb link</a>
<a href="data:text/html;base64,PHNjcmlwdD4=">data link</a>
<a href="file:///etc/shadow">file link</a>
<a href="https://example.com/ok">web link</a>
</p></body></html>`

const linkMarkdown = "# Links\n\n" +
	"[js one](javascript:alert(1)) [js two](JaVaScript:alert(2)) [js three](<javascript:alert(3)>) " +
	"[vb link](vbscript:msgbox) [data link](data:text/html;base64,PHNjcmlwdD4=) [file link](file:///etc/shadow) " +
	"[web link](https://example.com/ok)\n"

func linkDOCX(t *testing.T) []byte {
	rels := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
		`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="javascript:alert(1)" TargetMode="External"/>` +
		`<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="vbscript:msgbox" TargetMode="External"/>` +
		`<Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="data:text/html;base64,PHNjcmlwdD4=" TargetMode="External"/>` +
		`<Relationship Id="rId4" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="https://example.com/ok" TargetMode="External"/>` +
		`</Relationships>`
	link := func(id, text string) string {
		return `<w:hyperlink r:id="` + id + `"><w:r><w:t xml:space="preserve">` + text + ` </w:t></w:r></w:hyperlink>`
	}
	doc := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><w:body><w:p>` +
		link("rId1", "js one") + link("rId2", "vb link") + link("rId3", "data link") + link("rId4", "web link") +
		`</w:p></w:body></w:document>`
	return docMinimalDOCX(t, map[string]string{"word/document.xml": doc, "word/_rels/document.xml.rels": rels})
}

// TestScriptLinks_Dropped holds issue 18 item 8: every document writer drops javascript:,
// vbscript:, file: and non-image data: link targets and keeps the link's text and web links.
func TestScriptLinks_Dropped(t *testing.T) {
	c := docCatalog()
	cases := []struct {
		from, to string
		in       []byte
		texts    []string // link texts that must survive
	}{
		{fmtHTML, fmtMarkdown, []byte(linkHTML), []string{"js one", "js two", "js three", "vb link", "data link", "file link"}},
		{fmtHTML, fmtTXT, []byte(linkHTML), []string{"js one", "vb link", "data link"}},
		{fmtHTML, fmtEPUB, []byte(linkHTML), []string{"js one", "vb link", "data link"}},
		{fmtHTML, fmtPDF, []byte(linkHTML), nil},
		{fmtMarkdown, fmtHTML, []byte(linkMarkdown), []string{"js one", "js two", "vb link", "data link"}},
		{fmtMarkdown, fmtTXT, []byte(linkMarkdown), []string{"js one", "js two", "vb link", "data link"}},
		{fmtMarkdown, fmtEPUB, []byte(linkMarkdown), []string{"js one", "vb link", "data link"}},
		{fmtMarkdown, fmtPDF, []byte(linkMarkdown), nil},
		{fmtDOCX, fmtHTML, linkDOCX(t), []string{"js one", "vb link", "data link"}},
		{fmtDOCX, fmtMarkdown, linkDOCX(t), []string{"js one", "vb link", "data link"}},
		{fmtDOCX, fmtTXT, linkDOCX(t), []string{"js one", "vb link", "data link"}},
	}
	for _, tc := range cases {
		t.Run(tc.from+"_to_"+tc.to, func(t *testing.T) {
			out, err := docConvertData(t, c, tc.from, tc.to, tc.in, convert.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := string(out)
			if tc.to == fmtEPUB {
				var b strings.Builder
				for _, v := range docZipEntries(t, out) {
					b.WriteString(v)
				}
				s = b.String()
			}
			low := strings.ToLower(s)
			for _, bad := range append([]string{"javascript:", "vbscript:", "data:text/html", "file:"}, scriptLinkMarkers...) {
				if strings.Contains(low, strings.ToLower(bad)) {
					t.Errorf("output keeps %q:\n%s", bad, s)
				}
			}
			if tc.to != fmtTXT || tc.from != fmtDOCX {
				// The web link's target stays (PDF: as the link annotation's URI).
				if !strings.Contains(s, "https://example.com/ok") {
					t.Errorf("output lost the web link:\n%s", s)
				}
			}
			for _, want := range tc.texts {
				if !strings.Contains(s, want) {
					t.Errorf("output lost the link text %q:\n%s", want, s)
				}
			}
		})
	}
}

// TestScriptLink lists the targets scriptLink refuses and keeps.
func TestScriptLink(t *testing.T) {
	for dest, want := range map[string]bool{
		"javascript:alert(1)": true, " \x01JAVASCRIPT:x": true, "java\tscript:x": true, "jav\nascript:x": true,
		"vbscript:x": true, "file:///etc/passwd": true, "data:text/html,<script>": true, "DATA:text/html,x": true,
		"data:image/svg+xml,<svg>": true, "data:image/png;base64,AAAA": false, "data:image/jpeg;base64,AA": false,
		"https://example.com": false, "mailto:a@b.c": false, "#top": false, "relative/page.html": false,
		"javascript.html": false, "": false,
	} {
		if got := scriptLink(dest); got != want {
			t.Errorf("scriptLink(%q) = %v, want %v", dest, got, want)
		}
	}
}

// FuzzScriptLinks converts arbitrary HTML to Markdown and reads the Markdown back: no link
// in it may lead to a script or document target (scriptLink), however the HTML spelled it.
func FuzzScriptLinks(f *testing.F) {
	f.Add([]byte(linkHTML))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		var md bytes.Buffer
		err := htmlToMarkdown(ctx, io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), &md, convert.Params{})
		docFuzzErr(t, "markdown", err)
		if err != nil {
			return
		}
		doc, err := parseMarkdown(ctx, md.Bytes())
		if err != nil {
			return // our own output over a guard's limit; not this target's concern
		}
		_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
			if l, ok := n.(*ast.Link); ok && entering && scriptLink(string(l.Destination)) {
				t.Fatalf("HTML -> Markdown kept the link target %q:\n%s", l.Destination, md.Bytes())
			}
			return ast.WalkContinue, nil
		})
	})
}
