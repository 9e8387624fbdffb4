package huffman

import (
	"math/rand"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/mp3dec/internal/bits"
)

// decodeWalk is go-mp3's bit-by-bit tree walk (the code word only), the oracle for the lookup.
func decodeWalk(m *bits.Bits, tableNum int) (x, y int, ok bool) {
	h := huffmanMain[tableNum]
	point, bitsleft := 0, 32
	for {
		if (h.hufftable[point] & 0xff00) == 0 {
			return int((h.hufftable[point] >> 4) & 0xf), int(h.hufftable[point] & 0xf), true
		}
		if m.Bit() != 0 {
			for (h.hufftable[point] & 0xff) >= 250 {
				point += int(h.hufftable[point]) & 0xff
			}
			point += int(h.hufftable[point]) & 0xff
		} else {
			for (h.hufftable[point] >> 8) >= 250 {
				point += int(h.hufftable[point]) >> 8
			}
			point += int(h.hufftable[point]) >> 8
		}
		bitsleft--
		if bitsleft <= 0 || point >= h.treelen {
			return 0, 0, false
		}
	}
}

// TestDecode_LookupMatchesWalk decodes random bits with every table, through Decode and through
// the tree walk, and requires the same values, errors and bit positions.
func TestDecode_LookupMatchesWalk(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for tbl := range huffmanMain {
		if huffmanMain[tbl].treelen == 0 {
			continue
		}
		for iter := 0; iter < 200; iter++ {
			buf := make([]byte, 1+r.Intn(40))
			r.Read(buf)
			a, b := bits.New(buf), bits.New(buf)
			for n := 0; n < 64; n++ {
				x, y, v, w, err := Decode(a, tbl)
				// the reference: the walk, then the same sign/linbits reading as Decode
				rx, ry, ok := decodeWalk(b, tbl)
				if !ok {
					if err == nil {
						t.Fatalf("table %d: Decode gave no error where the walk fails", tbl)
					}
					break
				}
				if err != nil {
					t.Fatalf("table %d: %v where the walk decodes", tbl, err)
				}
				if tbl > 31 {
					if (ry>>3)&1 != absi(v) || (ry>>2)&1 != absi(w) || (ry>>1)&1 != absi(x) || ry&1 != absi(y) {
						t.Fatalf("table %d: got %d %d %d %d, walk %x", tbl, v, w, x, y, ry)
					}
				} else if lb := huffmanMain[tbl].linbits; (rx < 15 || lb == 0) && rx != absi(x) || (ry < 15 || lb == 0) && ry != absi(y) {
					t.Fatalf("table %d: got %d %d, walk %d %d", tbl, x, y, rx, ry)
				}
				// resynchronise the reference reader after the sign and linbits bits
				b.SetPos(a.BitPos())
			}
		}
	}
}

func absi(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
