package exif

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// block builds a TIFF-structured EXIF block whose IFD0 holds an orientation (when v > 0)
// after another entry.
func block(bo binary.ByteOrder, v int) []byte {
	var b bytes.Buffer
	if bo == binary.LittleEndian {
		b.WriteString("II*\x00")
	} else {
		b.WriteString("MM\x00*")
	}
	binary.Write(&b, bo, uint32(8))
	n := uint16(1)
	if v > 0 {
		n = 2
	}
	binary.Write(&b, bo, n)
	// ImageDescription-like entry of another tag first.
	binary.Write(&b, bo, []uint16{0x010f, 2})
	binary.Write(&b, bo, []uint32{1, 0})
	if v > 0 {
		binary.Write(&b, bo, []uint16{TagOrientation, 3})
		binary.Write(&b, bo, uint32(1))
		binary.Write(&b, bo, []uint16{uint16(v), 0})
	}
	binary.Write(&b, bo, uint32(0))
	return b.Bytes()
}

func TestOrientation(t *testing.T) {
	for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		for v := 1; v <= 8; v++ {
			b := block(bo, v)
			if got := OrientationOf(b); got != v {
				t.Errorf("%v orientation %d: got %d", bo, v, got)
			}
			reset := WithOrientation(b, 1)
			if got := OrientationOf(reset); got != 1 {
				t.Errorf("%v reset from %d: got %d", bo, v, got)
			}
			if v != 1 && OrientationOf(b) != v {
				t.Errorf("WithOrientation changed its input")
			}
		}
		if got := OrientationOf(block(bo, 0)); got != 1 {
			t.Errorf("no orientation: got %d, want 1", got)
		}
		if got := OrientationOf(block(bo, 9)); got != 1 {
			t.Errorf("orientation 9: got %d, want 1", got)
		}
	}
	for _, bad := range [][]byte{nil, []byte("II*"), []byte("XX*\x00\x08\x00\x00\x00"), []byte("II*\x00\xff\xff\xff\xff")} {
		if _, ok, err := Orientation(bytesReaderAt(bad), int64(len(bad))); ok || err == nil {
			t.Errorf("%q: ok %v err %v, want an error", bad, ok, err)
		}
	}
}

// FuzzOrientation: any block reads without panicking, and a found orientation can be reset.
func FuzzOrientation(f *testing.F) {
	f.Add(block(binary.LittleEndian, 6))
	f.Add(block(binary.BigEndian, 8))
	f.Add(block(binary.BigEndian, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		fd, ok, _ := Orientation(bytesReaderAt(b), int64(len(b)))
		if !ok {
			return
		}
		if fd.Value < 1 || fd.Value > 8 {
			t.Fatalf("orientation %d", fd.Value)
		}
		if got := OrientationOf(WithOrientation(b, 1)); got != 1 {
			t.Fatalf("reset gave %d", got)
		}
	})
}
