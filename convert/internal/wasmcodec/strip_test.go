package wasmcodec

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"
)

// The AVIF module loses its DWARF sections (what made loading it from the cache cost 268,000
// reads) and nothing else; a binary that is not WebAssembly, or is cut short, is refused.
func TestStripDebug(t *testing.T) {
	zr, err := gzip.NewReader(bytes.NewReader(avifWasm))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	out, err := stripDebug(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(bin, []byte(".debug_info")) || bytes.Contains(out, []byte(".debug_info")) || bytes.Contains(out, []byte(".debug_line")) {
		t.Errorf("DWARF sections: %t before, %t after", bytes.Contains(bin, []byte(".debug_info")), bytes.Contains(out, []byte(".debug_")))
	}
	if !bytes.Contains(out, []byte("target_features")) || len(out) < len(bin)*9/10 {
		t.Errorf("other sections lost: %d bytes of %d kept", len(out), len(bin))
	}
	// A module with one custom section of each kind, by hand.
	mod := []byte("\x00asm\x01\x00\x00\x00" +
		"\x00\x08\x07.debug_" + // custom ".debug_", empty
		"\x00\x05\x04keep" + // custom "keep"
		"\x01\x01\x00") // an empty type section
	want := []byte("\x00asm\x01\x00\x00\x00\x00\x05\x04keep\x01\x01\x00")
	if got, err := stripDebug(mod); err != nil || !bytes.Equal(got, want) {
		t.Errorf("stripDebug(hand-made) = %q, %v; want %q", got, err, want)
	}
	for _, bad := range [][]byte{nil, []byte("\x7fELF\x01\x00\x00\x00"), mod[:12], append(bytes.Clone(mod[:8]), 0x01, 0xff, 0xff, 0xff, 0xff, 0xff)} {
		if _, err := stripDebug(bad); err == nil {
			t.Errorf("stripDebug(%q) accepted it", bad)
		}
	}
}
