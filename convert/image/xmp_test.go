package image

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image/jpeg"
	"os/exec"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/convert"
)

// testXMP is a small XMP packet with a title exiftool and the chunk readers can find.
const testXMP = `<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title><rdf:Alt><rdf:li xml:lang="x-default">convsvc xmp test</rdf:li></rdf:Alt></dc:title></rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>`

// TestKeepMetadata_XMP: with strip_metadata false a JPEG's XMP packet reaches JPEG (APP1),
// PNG (an iTXt chunk with the keyword XML:com.adobe.xmp, before the image data, its CRC right)
// and WebP (an "XMP " chunk after the image, with the VP8X XMP flag), byte for byte; read back
// here by walking the containers' own chunks, and by exiftool where it is installed (under
// CI=true it must be). By default none is written.
func TestKeepMetadata_XMP(t *testing.T) {
	var jb bytes.Buffer
	if err := jpeg.Encode(&jb, asymmetric(120, 80), nil); err != nil {
		t.Fatal(err)
	}
	src := jb.Bytes()
	seg := appendJPEGSegment(nil, 0xE1, []byte("http://ns.adobe.com/xap/1.0/\x00"), []byte(testXMP))
	src = append(append(append([]byte(nil), src[:2]...), seg...), src[2:]...)
	dir := t.TempDir()
	in := writeFile(t, dir, "in.jpg", src)
	keep := false
	for _, to := range []string{"jpeg", "png", "webp"} {
		for _, opts := range []convert.Options{{StripMetadata: &keep, Width: 40}, {StripMetadata: &keep, Quality: 70}} {
			out, ws, err := convertFile(t, "jpeg", to, in, opts)
			if err != nil {
				t.Fatalf("%s: %v", to, err)
			}
			for _, w := range ws {
				if w.Code == convert.WarnMetadataDropped {
					t.Errorf("%s: warning %+v", to, w)
				}
			}
			var got string
			switch to {
			case "jpeg":
				got = jpegXMPChunk(t, out)
			case "png":
				got = pngXMPChunk(t, out)
			case "webp":
				got = webpXMPChunk(t, out)
			}
			if got != testXMP {
				t.Errorf("%s %+v: XMP %q, want the input's packet", to, opts, got)
			}
			if _, n := decodeOutput(t, to, out); n < 1 {
				t.Errorf("%s: no image", to)
			}
		}
		out, _, err := convertFile(t, "jpeg", to, in, convert.Options{Width: 40})
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out, []byte("convsvc xmp test")) {
			t.Errorf("%s: XMP written by default", to)
		}
	}

	// exiftool reads the title back from each output.
	exiftool, err := exec.LookPath("exiftool")
	if err != nil {
		needTool(t, "exiftool") // fails under CI=true, skips the rest otherwise
	}
	for _, to := range []string{"jpeg", "png", "webp"} {
		out, _, err := convertFile(t, "jpeg", to, in, convert.Options{StripMetadata: &keep, Width: 40})
		if err != nil {
			t.Fatal(err)
		}
		p := writeFile(t, dir, "out."+to, out)
		if got := strings.TrimSpace(run(t, exiftool, "-s3", "-XMP:Title", p)); got != "convsvc xmp test" {
			t.Errorf("%s: exiftool reads XMP title %q", to, got)
		}
		if got := run(t, exiftool, "-validate", "-warning", "-s3", p); strings.Contains(got, "XMP") || strings.Contains(got, "iTXt") || strings.Contains(got, "VP8X") {
			t.Errorf("%s: exiftool -validate: %s", to, got)
		}
	}
}

// jpegXMPChunk returns the XMP of a JPEG's APP1 segment before the scan.
func jpegXMPChunk(t *testing.T, b []byte) string {
	t.Helper()
	const id = "http://ns.adobe.com/xap/1.0/\x00"
	for off := 2; off+4 <= len(b) && b[off] == 0xFF; {
		marker, n := b[off+1], int(binary.BigEndian.Uint16(b[off+2:]))
		if marker == 0xDA || off+2+n > len(b) {
			break
		}
		seg := b[off+4 : off+2+n]
		if marker == 0xE1 && bytes.HasPrefix(seg, []byte(id)) {
			return string(seg[len(id):])
		}
		off += 2 + n
	}
	return ""
}

// pngXMPChunk returns the text of a PNG's iTXt XML:com.adobe.xmp chunk, checking every chunk's
// CRC and that the XMP comes before the image data.
func pngXMPChunk(t *testing.T, b []byte) string {
	t.Helper()
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatal("not a PNG")
	}
	xmp, seenIDAT := "", false
	for off := 8; off+12 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[off:]))
		typ := string(b[off+4 : off+8])
		if off+12+n > len(b) {
			t.Fatalf("PNG chunk %q past the end", typ)
		}
		if crc := binary.BigEndian.Uint32(b[off+8+n:]); crc != crc32.ChecksumIEEE(b[off+4:off+8+n]) {
			t.Errorf("PNG chunk %q: bad CRC", typ)
		}
		data := b[off+8 : off+8+n]
		switch typ {
		case "IDAT":
			seenIDAT = true
		case "iTXt":
			// keyword NUL, compression flag 0, method 0, language NUL, translated keyword NUL
			if k, rest, ok := bytes.Cut(data, []byte{0}); ok && string(k) == "XML:com.adobe.xmp" && len(rest) >= 4 && rest[0] == 0 && rest[1] == 0 && rest[2] == 0 && rest[3] == 0 {
				if seenIDAT {
					t.Error("PNG: the XMP chunk follows the image data")
				}
				xmp = string(rest[4:])
			}
		}
		off += 12 + n
	}
	return xmp
}

// webpXMPChunk returns a WebP's "XMP " chunk, checking the RIFF size, that VP8X comes first
// with its XMP flag set, and that the chunk follows the image data.
func webpXMPChunk(t *testing.T, b []byte) string {
	t.Helper()
	if len(b) < 20 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		t.Fatal("not a WebP")
	}
	if n := int(binary.LittleEndian.Uint32(b[4:])); n != len(b)-8 {
		t.Errorf("RIFF size %d, file %d", n, len(b)-8)
	}
	xmp, seenImage, first := "", false, true
	var flags byte
	for off := 12; off+8 <= len(b); {
		typ, n := string(b[off:off+4]), int(binary.LittleEndian.Uint32(b[off+4:]))
		if off+8+n > len(b) {
			t.Fatalf("WebP chunk %q past the end", typ)
		}
		data := b[off+8 : off+8+n]
		if first && typ != "VP8X" {
			t.Fatalf("first chunk %q, want VP8X", typ)
		}
		first = false
		switch typ {
		case "VP8X":
			flags = data[0]
		case "VP8 ", "VP8L", "ALPH":
			seenImage = true
		case "XMP ":
			if !seenImage {
				t.Error("WebP: the XMP chunk comes before the image")
			}
			xmp = string(data)
		}
		off += 8 + n + n&1
	}
	if xmp != "" && flags&0x04 == 0 {
		t.Errorf("VP8X flags %#x without the XMP flag", flags)
	}
	return xmp
}
