package isobmff

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
)

// box32 is a box with a 32-bit size.
func box32(typ string, payload []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(payload)))
	return append(append(b, typ...), payload...)
}

// box64 is a box with a 64-bit size (size field 1).
func box64(typ string, payload []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 1)
	b = binary.BigEndian.AppendUint64(append(b, typ...), uint64(16+len(payload)))
	return append(b, payload...)
}

// toEnd is a box of size 0: it runs to the end of its container.
func toEnd(typ string, payload []byte) []byte {
	return append(append([]byte{0, 0, 0, 0}, typ...), payload...)
}

func describe(boxes []Box) string {
	var s []string
	for _, b := range boxes {
		s = append(s, fmt.Sprintf("%s@%d:%q", b.Type, b.Offset, b.Payload))
	}
	return fmt.Sprint(s)
}

func TestChildren(t *testing.T) {
	ftyp, meta := box32("ftyp", []byte("avif")), box64("meta", []byte("abc"))
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "[]"},
		{"one 32-bit box", ftyp, `[ftyp@8:"avif"]`},
		{"32-bit then 64-bit", append(append([]byte{}, ftyp...), meta...), `[ftyp@8:"avif" meta@28:"abc"]`},
		{"size 0 runs to the end", append(append([]byte{}, ftyp...), toEnd("mdat", []byte("xyz"))...), `[ftyp@8:"avif" mdat@20:"xyz"]`},
		{"empty payload", box32("free", nil), `[free@8:""]`},
		{"header cut short", append(append([]byte{}, ftyp...), 0, 0, 0), `[ftyp@8:"avif"]`},
		{"64-bit header cut short", append(append([]byte{}, ftyp...), meta[:12]...), `[ftyp@8:"avif"]`},
		{"size below its header", append(append([]byte{}, ftyp...), 0, 0, 0, 7, 'b', 'a', 'd', '!'), `[ftyp@8:"avif"]`},
		{"64-bit size below its header", append(append([]byte{}, ftyp...), box64("meta", nil)[:8]...), `[ftyp@8:"avif"]`},
		{"size past the end", append(append([]byte{}, ftyp...), 0, 0, 0, 99, 'm', 'e', 't', 'a'), `[ftyp@8:"avif"]`},
		{"64-bit size past the end", append(binary.BigEndian.AppendUint64([]byte{0, 0, 0, 1, 'm', 'e', 't', 'a'}, 1<<63), 1), `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describe(Children(tt.in)); got != tt.want {
				t.Fatalf("Children = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestChildren_Nested: a payload walks like a file, and the slices alias the input.
func TestChildren_Nested(t *testing.T) {
	ipco := box32("ipco", append(box32("ispe", []byte{1, 2}), box32("pixi", []byte{3})...))
	file := box32("iprp", ipco)
	top := Children(file)
	if len(top) != 1 || !bytes.Equal(top[0].Whole, file) {
		t.Fatalf("top %s", describe(top))
	}
	props := Children(Children(top[0].Payload)[0].Payload)
	if got := describe(props); got != `[ispe@8:"\x01\x02" pixi@18:"\x03"]` {
		t.Fatalf("props %s", got)
	}
	props[1].Payload[0] = 9
	if file[len(file)-1] != 9 {
		t.Fatal("Payload is a copy, want a slice of the input")
	}
}

func FuzzChildren(f *testing.F) {
	f.Add(box32("ftyp", []byte("avif")))
	f.Add(append(box64("meta", box32("hdlr", []byte("pict"))), toEnd("mdat", []byte{1, 2, 3})...))
	f.Fuzz(func(t *testing.T, b []byte) {
		off := 0
		for _, box := range Children(b) {
			// The boxes tile a prefix of b in order, each Whole its header and Payload.
			if len(box.Whole) < 8 || !bytes.Equal(box.Whole, b[off:off+len(box.Whole)]) ||
				box.Offset != off+len(box.Whole)-len(box.Payload) || !bytes.Equal(box.Payload, b[box.Offset:off+len(box.Whole)]) ||
				box.Type != string(b[off+4:off+8]) {
				t.Fatalf("box %s at %d does not match the input", box.Type, off)
			}
			off += len(box.Whole)
		}
	})
}
