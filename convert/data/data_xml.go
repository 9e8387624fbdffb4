package data

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html/charset"

	"github.com/convsvc/convsvc/convert"
)

// XML maps to the tree model like this (docs/formats.md repeats it for users):
//
//   - The document is an object with one member, the root element.
//   - An element with neither attributes nor child elements is its text, a string ("" when empty).
//   - Any other element is an object: attributes first as "@name" members, then child
//     elements in order of first appearance, a repeated child becoming an array; text that is
//     not only whitespace goes to a "#text" member (trimmed and joined when it is mixed with
//     child elements, so its position among them is not kept).
//   - Names keep their namespace prefixes as written ("dc:title", "@xmlns:dc").
//   - Values are strings: XML has no numbers or booleans.
//   - DTDs are ignored: no entity is ever defined or expanded beyond XML's five and character
//     references, and nothing outside the file is read. Comments and processing instructions
//     are dropped.
//
// Writing reverses it. Null becomes an empty element; an empty array, an array directly
// inside an array, a key that is not an XML name and a top level that is not one element fail.

// decodeXMLTree reads an XML document into the tree model.
func decodeXMLTree(ctx context.Context, data []byte) (any, error) {
	if err := checkXMLHead(data); err != nil {
		return nil, err
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	dec.CharsetReader = charset.NewReaderLabel
	c := new(newNodeCounter(ctx, func() (int64, int64) { return dec.InputOffset(), int64(len(data)) }))

	type frame struct {
		name     string
		obj      object
		index    map[string]int
		chunks   []string
		size     int
		children bool
	}
	var stack []*frame
	var root any
	rootName := ""
	xmlErr := func(err error) error {
		line, _ := dec.InputPos()
		msg := err.Error()
		var se *xml.SyntaxError
		if errors.As(err, &se) {
			line, msg = se.Line, se.Msg
		}
		return convert.Errorf(err, "input is not a valid XML file (line %d: %s)", line, msg)
	}
	for {
		tok, err := dec.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, xmlErr(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) == 0 && rootName != "" {
				return nil, convert.Errorf(nil, "input is not a valid XML file (a second root element <%s> follows <%s>)", xmlName(t.Name), rootName)
			}
			if err := c.add(len(stack)); err != nil {
				return nil, err
			}
			f := &frame{name: xmlName(t.Name)}
			var attrSeen map[string]bool // past a few attributes, so that checking stays linear
			if len(t.Attr) > 8 {
				attrSeen = make(map[string]bool, len(t.Attr))
			}
			for _, a := range t.Attr {
				key := "@" + xmlName(a.Name)
				dup := false
				if attrSeen != nil {
					dup = attrSeen[key]
					attrSeen[key] = true
				} else {
					_, dup = f.obj.get(key)
				}
				if dup {
					return nil, convert.Errorf(nil, "input is not a valid XML file (attribute %s appears twice on <%s>)", key[1:], f.name)
				}
				f.obj = append(f.obj, member{key, a.Value})
			}
			if len(stack) > 0 {
				stack[len(stack)-1].children = true
			}
			stack = append(stack, f)
		case xml.EndElement:
			if len(stack) == 0 || stack[len(stack)-1].name != xmlName(t.Name) {
				line, _ := dec.InputPos()
				return nil, convert.Errorf(nil, "input is not a valid XML file (line %d: unexpected end element </%s>)", line, xmlName(t.Name))
			}
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			var val any
			text := strings.Join(f.chunks, "")
			if f.children {
				// Mixed content: the pieces of text between child elements, trimmed.
				var parts []string
				for _, c := range f.chunks {
					if c = strings.TrimSpace(c); c != "" {
						parts = append(parts, c)
					}
				}
				text = strings.Join(parts, " ")
			}
			switch {
			case len(f.obj) == 0 && !f.children:
				val = text
			default:
				if text != "" {
					f.obj = append(f.obj, member{"#text", text})
				}
				if f.obj == nil {
					f.obj = object{}
				}
				val = f.obj
			}
			if len(stack) == 0 {
				root, rootName = val, f.name
				continue
			}
			p := stack[len(stack)-1]
			if p.index == nil {
				p.index = map[string]int{}
			}
			if i, seen := p.index[f.name]; seen {
				// Decoding makes arrays only by repetition, so an array here is one.
				if arr, ok := p.obj[i].val.([]any); ok {
					p.obj[i].val = append(arr, val)
				} else {
					p.obj[i].val = []any{p.obj[i].val, val}
				}
			} else {
				p.index[f.name] = len(p.obj)
				p.obj = append(p.obj, member{f.name, val})
			}
		case xml.CharData:
			if len(stack) == 0 {
				if len(bytes.TrimSpace(t)) != 0 {
					return nil, convert.Errorf(nil, "input is not a valid XML file (text outside the root element)")
				}
				continue
			}
			f := stack[len(stack)-1]
			if f.children && len(bytes.TrimSpace(t)) == 0 {
				continue // indentation between child elements
			}
			f.size += len(t)
			if f.size > DataMaxTreeBytes {
				return nil, convert.Errorf(nil, "input holds more text than the %s limit", convert.ByteSize(DataMaxTreeBytes))
			}
			f.chunks = append(f.chunks, string(t))
		}
	}
	if len(stack) > 0 {
		return nil, convert.Errorf(nil, "input is not a valid XML file (it ends inside <%s>)", stack[len(stack)-1].name)
	}
	if rootName == "" {
		return nil, convert.Errorf(nil, "input is not a valid XML file (it has no root element)")
	}
	if obj, ok := root.(object); ok && rootName == xmlWrapperName {
		if v, _ := obj.get("@" + xmlWrapperAttr); v == xmlWrapperValue {
			i := slices.IndexFunc(obj, func(m member) bool { return m.key == "@"+xmlWrapperAttr })
			return slices.Delete(obj, i, i+1), nil
		}
	}
	return object{{rootName, root}}, nil
}

// xmlName writes a name with its prefix as in the document.
func xmlName(n xml.Name) string {
	if n.Space == "" {
		return n.Local
	}
	return n.Space + ":" + n.Local
}

// checkXMLHead checks that the input looks like XML: optional BOM and whitespace, then '<'.
func checkXMLHead(data []byte) error {
	head := data[:min(len(data), convert.SniffLen)]
	if len(head) == 0 {
		return convert.Errorf(nil, "input is not a valid XML file (it is empty)")
	}
	t := bytes.TrimLeft(bytes.TrimPrefix(head, utf8BOM), " \t\r\n")
	if len(t) > 0 && t[0] == '<' {
		return nil
	}
	if _, name := convert.Sniff(head); name != "text" {
		return convert.Errorf(nil, "input is not a valid XML file (it looks like %s)", name)
	}
	return convert.Errorf(nil, "input is not a valid XML file (it does not start with '<')")
}

// writeXMLTree writes v as an indented XML document.
func writeXMLTree(ctx context.Context, w io.Writer, v any) error {
	root, ok := wrapTopArray(v).(object)
	if !ok {
		return lossf("the top level is %s, but XML needs one root element", kindOf(v))
	}
	if len(root) != 1 || isArray(root[0].val) {
		if _, taken := root.get("@" + xmlWrapperAttr); taken {
			return lossf("the top level has %d members and one is named %q, which the XML root wrapper needs for itself", len(root), "@"+xmlWrapperAttr)
		}
		// Several members, or one array (repeated elements): one documented wrapper holds them,
		// and decodeXMLTree unwraps it again.
		root = object{{xmlWrapperName, append(object{{"@" + xmlWrapperAttr, xmlWrapperValue}}, root...)}}
		return writeXMLRoot(ctx, w, root[0].key, root[0].val, "$")
	}
	return writeXMLRoot(ctx, w, root[0].key, root[0].val, childPath("$", root[0].key))
}

// isArray reports whether v is an array.
func isArray(v any) bool {
	_, ok := v.([]any)
	return ok
}

// The wrapper that gives XML its one root when the top level has several members or one array:
// <root convsvc="members">...</root>. Reading XML back, a root element of that name with that
// attribute is unwrapped, so json -> xml -> json keeps the members.
const (
	xmlWrapperName  = "root"
	xmlWrapperAttr  = "convsvc"
	xmlWrapperValue = "members"
)

// writeXMLRoot writes the document: the declaration and the root element.
func writeXMLRoot(ctx context.Context, w io.Writer, name string, v any, path string) error {
	xw := &xmlWriter{w: bufio.NewWriterSize(&convert.ContextWriter{Ctx: ctx, W: w}, 32<<10), prog: treeProgressFrom(ctx)}
	xw.buf = append(xw.buf, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"...)
	if err := xw.element(name, v, path, 0); err != nil {
		return err
	}
	if _, err := xw.w.Write(xw.buf); err != nil {
		return err
	}
	return xw.w.Flush()
}

type xmlWriter struct {
	w    *bufio.Writer
	buf  []byte
	prog *treeProgress // counts each element written
}

func (xw *xmlWriter) flush() error {
	if len(xw.buf) < 16<<10 {
		return nil
	}
	_, err := xw.w.Write(xw.buf)
	xw.buf = xw.buf[:0]
	return err
}

// validXMLName reports whether s is an XML 1.0 Name (with ':' allowed for prefixes).
func validXMLName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || r == ':' || unicode.IsLetter(r) {
			continue
		}
		if i > 0 && (r == '-' || r == '.' || unicode.IsDigit(r) || r == 0xB7 || unicode.Is(unicode.Mn, r)) {
			continue
		}
		return false
	}
	return true
}

func (xw *xmlWriter) indent(depth int) {
	for range depth {
		xw.buf = append(xw.buf, "  "...)
	}
}

func (xw *xmlWriter) element(name string, v any, path string, depth int) error {
	xw.prog.wrote()
	if !validXMLName(name) {
		return lossf("key %q at %s is not a valid XML element name", name, path)
	}
	if err := xw.flush(); err != nil {
		return err
	}
	xw.indent(depth)
	xw.buf = append(xw.buf, '<')
	xw.buf = append(xw.buf, name...)
	switch v := v.(type) {
	case object:
		var text string
		hasText := false
		var children []member
		for _, m := range v {
			switch {
			case strings.HasPrefix(m.key, "@"):
				an := m.key[1:]
				if !validXMLName(an) {
					return lossf("key %q at %s is not a valid XML attribute name", m.key, path)
				}
				s, err := xmlScalar(m.val, childPath(path, m.key), "an attribute")
				if err != nil {
					return err
				}
				xw.buf = append(xw.buf, ' ')
				xw.buf = append(xw.buf, an...)
				xw.buf = append(xw.buf, `="`...)
				xw.buf = appendXMLEscaped(xw.buf, s, true)
				xw.buf = append(xw.buf, '"')
			case m.key == "#text":
				s, err := xmlScalar(m.val, childPath(path, m.key), "text")
				if err != nil {
					return err
				}
				text, hasText = s, true
			default:
				children = append(children, m)
			}
		}
		if len(children) == 0 {
			if !hasText || text == "" {
				xw.buf = append(xw.buf, "/>\n"...)
				return nil
			}
			xw.buf = append(xw.buf, '>')
			xw.buf = appendXMLEscaped(xw.buf, text, false)
			xw.closeTag(name)
			return nil
		}
		xw.buf = append(xw.buf, ">\n"...)
		if hasText && text != "" {
			xw.indent(depth + 1)
			xw.buf = appendXMLEscaped(xw.buf, text, false)
			xw.buf = append(xw.buf, '\n')
		}
		for _, m := range children {
			cp := childPath(path, m.key)
			if arr, ok := m.val.([]any); ok {
				if len(arr) == 0 {
					return lossf("value at %s is an empty array, which XML cannot hold", cp)
				}
				for i, e := range arr {
					if _, nested := e.([]any); nested {
						return lossf("value at %s is an array inside an array, which XML cannot hold", indexPath(cp, i))
					}
					if err := xw.element(m.key, e, indexPath(cp, i), depth+1); err != nil {
						return err
					}
				}
				continue
			}
			if err := xw.element(m.key, m.val, cp, depth+1); err != nil {
				return err
			}
		}
		xw.indent(depth)
		xw.closeTag(name)
		return nil
	case []any:
		return lossf("value at %s is an array inside an array, which XML cannot hold", path)
	default:
		s, err := xmlScalar(v, path, "text")
		if err != nil {
			return err
		}
		if s == "" {
			xw.buf = append(xw.buf, "/>\n"...)
			return nil
		}
		xw.buf = append(xw.buf, '>')
		xw.buf = appendXMLEscaped(xw.buf, s, false)
		xw.closeTag(name)
		return nil
	}
}

func (xw *xmlWriter) closeTag(name string) {
	xw.buf = append(xw.buf, "</"...)
	xw.buf = append(xw.buf, name...)
	xw.buf = append(xw.buf, ">\n"...)
}

// xmlScalar writes a scalar as text; objects and arrays fail where only text fits.
func xmlScalar(v any, path, where string) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case json.Number:
		return string(v), nil
	case float64:
		return strings.TrimPrefix(strconv.FormatFloat(v, 'g', -1, 64), "+"), nil
	case bool:
		return strconv.FormatBool(v), nil
	case nil:
		return "", nil
	}
	return "", lossf("value at %s is %s, but XML %s can only hold text", path, kindOf(v), where)
}

// appendXMLEscaped escapes text or an attribute value; characters XML 1.0 forbids fail to
// round-trip, so they are replaced by U+FFFD.
func appendXMLEscaped(buf []byte, s string, attr bool) []byte {
	for _, r := range s {
		switch r {
		case '<':
			buf = append(buf, "&lt;"...)
		case '>':
			buf = append(buf, "&gt;"...)
		case '&':
			buf = append(buf, "&amp;"...)
		case '"':
			if attr {
				buf = append(buf, "&quot;"...)
			} else {
				buf = append(buf, '"')
			}
		case '\r':
			buf = append(buf, "&#xD;"...)
		case '\n', '\t':
			if attr {
				buf = append(buf, "&#x"...)
				buf = strconv.AppendInt(buf, int64(r), 16)
				buf = append(buf, ';')
			} else {
				buf = append(buf, byte(r))
			}
		default:
			if r < 0x20 || r == 0xFFFE || r == 0xFFFF || (r >= 0xD800 && r <= 0xDFFF) {
				r = utf8.RuneError
			}
			buf = utf8.AppendRune(buf, r)
		}
	}
	return buf
}
