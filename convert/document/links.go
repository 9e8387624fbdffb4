package document

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// scriptLink reports whether a link target would run code or carry a document of its own
// when followed: javascript:, vbscript:, file: and data: URIs other than PNG, GIF, JPEG and
// WebP images, the same targets goldmark drops from Markdown -> HTML. The scheme is read as a
// browser reads it: surrounding spaces and control characters and any tab or line break
// inside do not hide it, and case does not matter.
func scriptLink(dest string) bool {
	var b strings.Builder
	for _, r := range strings.TrimLeft(dest, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ") {
		if r == '\t' || r == '\n' || r == '\r' {
			continue
		}
		b.WriteRune(r)
		if b.Len() >= 32 {
			break
		}
	}
	s := strings.ToLower(b.String())
	switch {
	case strings.HasPrefix(s, "javascript:"), strings.HasPrefix(s, "vbscript:"), strings.HasPrefix(s, "file:"):
		return true
	case strings.HasPrefix(s, "data:"):
		for _, ok := range []string{"data:image/png", "data:image/gif", "data:image/jpeg", "data:image/webp"} {
			if strings.HasPrefix(s, ok) {
				return false
			}
		}
		return true
	}
	return false
}

// dropScriptLinks removes the target of every <a> and <area> in n whose href is a
// scriptLink; the link's text stays as plain text.
func dropScriptLinks(n *html.Node) {
	if n.Type == html.ElementNode && (n.DataAtom == atom.A || n.DataAtom == atom.Area) {
		keep := n.Attr[:0]
		for _, a := range n.Attr {
			if a.Namespace == "" && a.Key == "href" && scriptLink(a.Val) {
				continue
			}
			keep = append(keep, a)
		}
		n.Attr = keep
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		dropScriptLinks(c)
	}
}
