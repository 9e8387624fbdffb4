package convert

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// SniffLen is how many leading bytes sniff looks at.
const SniffLen = 512

// magic is one signature: data matching prefix at offset (with '?' in mask positions
// matching anything) is the named kind.
type magic struct {
	id     string // our format id, or "" when we only know its name
	name   string // what the user is told it looks like
	prefix string
	mask   string // same length as prefix; '?' means any byte
}

// magics are tried in order; the first match wins.
var magics = []magic{
	{id: "png", name: "PNG", prefix: "\x89PNG\r\n\x1a\n"},
	{id: "jpeg", name: "JPEG", prefix: "\xff\xd8\xff"},
	{id: "gif", name: "GIF", prefix: "GIF87a"},
	{id: "gif", name: "GIF", prefix: "GIF89a"},
	{id: "bmp", name: "BMP", prefix: "BM"},
	{id: "tiff", name: "TIFF", prefix: "II*\x00"},
	{id: "tiff", name: "TIFF", prefix: "MM\x00*"},
	{id: "webp", name: "WebP", prefix: "RIFF????WEBP", mask: "....????...."},
	{id: "wav", name: "WAV", prefix: "RIFF????WAVE", mask: "....????...."},
	{id: "pdf", name: "PDF", prefix: "%PDF-"},
	{id: "zip", name: "ZIP", prefix: "PK\x03\x04"},
	{id: "zip", name: "ZIP", prefix: "PK\x05\x06"},
	{id: "flac", name: "FLAC", prefix: "fLaC"},
	{id: "mp3", name: "MP3", prefix: "ID3"},
	{name: "gzip", prefix: "\x1f\x8b"},
	{name: "7-Zip", prefix: "7z\xbc\xaf\x27\x1c"},
	{name: "RAR", prefix: "Rar!\x1a\x07"},
	{name: "Ogg", prefix: "OggS"},
	// AVIF and HEIC files are ISOBMFF ("????ftyp") and told apart by brand in sniffFtyp first;
	// these catch the usual major brands should that fail.
	{id: "avif", name: "AVIF", prefix: "????ftypavif", mask: "????........"},
	{id: "avif", name: "AVIF", prefix: "????ftypavis", mask: "????........"},
	{id: "heic", name: "HEIC", prefix: "????ftypheic", mask: "????........"},
	{id: "heic", name: "HEIC", prefix: "????ftypheix", mask: "????........"},
	{name: "MP4", prefix: "????ftyp", mask: "????...."},
	{name: "Photoshop", prefix: "8BPS"},
	{id: "jxl", name: "JPEG XL", prefix: "\xff\x0a"},
	{id: "jxl", name: "JPEG XL", prefix: "\x00\x00\x00\x0cJXL \x0d\x0a\x87\x0a"},
	{id: "qoi", name: "QOI", prefix: "qoif"},
	{name: "ICO", prefix: "\x00\x00\x01\x00"}, // sniffImage recognises well-formed ones as ico
	{name: "SQLite", prefix: "SQLite format 3\x00"},
	{name: "ELF executable", prefix: "\x7fELF"},
	{name: "Windows executable", prefix: "MZ"},
	// What "it looks like" names for archives nothing converts, and tar by its ustar header.
	{name: "Zstandard", prefix: "\x28\xb5\x2f\xfd"},
	{name: "xz", prefix: "\xfd7zXZ\x00"},
	{name: "bzip2", prefix: "BZh"},
	{id: "tar", name: "tar", prefix: strings.Repeat("?", 257) + "ustar", mask: strings.Repeat("?", 257) + "....."},
	// Files users upload in place of documents.
	{name: "PostScript", prefix: "%!PS"},
	{name: "RTF", prefix: "{\\rtf"},
	{name: "a legacy Microsoft Office file (.doc/.xls/.ppt)", prefix: "\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"},
}

// Sniff names what data looks like: our format id when it is one of ours (else ""), and a
// human name ("JPEG", "text", "unrecognised data"). It only looks at the first sniffLen bytes.
func Sniff(data []byte) (id, name string) {
	if len(data) == 0 {
		return "", "an empty file"
	}
	if len(data) > SniffLen {
		data = data[:SniffLen]
	}
	if id, name := sniffImage(data); name != "" {
		return id, name
	}
	for _, m := range magics {
		if matchMagic(data, m) {
			return m.id, m.name
		}
	}
	// MPEG audio frame sync without an ID3 tag: 11 set bits, and a layer that is not "reserved".
	if len(data) >= 2 && data[0] == 0xff && data[1]&0xe0 == 0xe0 && data[1]&0x06 != 0 {
		return "mp3", "MP3"
	}
	if LooksLikeText(data) {
		t := bytes.TrimLeft(data, "\xef\xbb\xbf \t\r\n")
		lower := bytes.ToLower(t[:min(len(t), 64)])
		switch {
		case bytes.HasPrefix(lower, []byte("<!doctype html")), bytes.HasPrefix(lower, []byte("<html")):
			return "html", "HTML"
		case bytes.HasPrefix(lower, []byte("<svg")), bytes.Contains(lower, []byte("<svg")):
			return "", "SVG"
		case bytes.HasPrefix(lower, []byte("<?xml")):
			return "", "XML"
		}
		return "", "text"
	}
	return "", "unrecognised data"
}

func matchMagic(data []byte, m magic) bool {
	if len(data) < len(m.prefix) {
		return false
	}
	for i := 0; i < len(m.prefix); i++ {
		if m.mask != "" && m.mask[i] == '?' {
			continue
		}
		if data[i] != m.prefix[i] {
			return false
		}
	}
	return true
}

// LooksLikeText reports whether data is UTF-8 without control characters other than whitespace.
func LooksLikeText(data []byte) bool {
	// A multi-byte rune may be cut at the end of the sniffed window.
	for i := 0; i < utf8.UTFMax && len(data) > 0 && !utf8.Valid(data); i++ {
		data = data[:len(data)-1]
	}
	if !utf8.Valid(data) {
		return false
	}
	for _, b := range data {
		if b < 0x20 && b != '\t' && b != '\n' && b != '\r' && b != '\f' {
			return false
		}
	}
	return true
}
