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

// decodeRef is go-mp3's Decode: the walk, then linbits and sign bits read bit by bit.
func decodeRef(m *bits.Bits, tableNum int) (x, y, v, w int, ok bool) {
	x, y, ok = decodeWalk(m, tableNum)
	if !ok {
		return
	}
	if tableNum > 31 {
		v, w, x, y = (y>>3)&1, (y>>2)&1, (y>>1)&1, y&1
		for _, p := range []*int{&v, &w, &x, &y} {
			if *p != 0 && m.Bit() == 1 {
				*p = -*p
			}
		}
		return
	}
	lb := huffmanMain[tableNum].linbits
	if lb != 0 && x == 15 {
		x += m.Bits(lb)
	}
	if x != 0 && m.Bit() == 1 {
		x = -x
	}
	if lb != 0 && y == 15 {
		y += m.Bits(lb)
	}
	if y != 0 && m.Bit() == 1 {
		y = -y
	}
	return
}

// TestDecode_LookupMatchesWalk decodes random bits with every table, through Decode's lookups
// and through go-mp3's bit-by-bit decoding, and requires the same values, errors and positions.
func TestDecode_LookupMatchesWalk(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for tbl := range huffmanMain {
		if huffmanMain[tbl].treelen == 0 {
			continue
		}
		for iter := 0; iter < 300; iter++ {
			buf := make([]byte, 1+r.Intn(40))
			r.Read(buf)
			a, b := bits.New(buf), bits.New(buf)
			for n := 0; n < 64; n++ {
				x, y, v, w, err := Decode(a, tbl)
				rx, ry, rv, rw, ok := decodeRef(b, tbl)
				if ok != (err == nil) {
					t.Fatalf("table %d: Decode error %v, reference ok %v", tbl, err, ok)
				}
				if !ok {
					break
				}
				if x != rx || y != ry || v != rv || w != rw || a.BitPos() != b.BitPos() {
					t.Fatalf("table %d: got %d %d %d %d at bit %d, reference %d %d %d %d at bit %d",
						tbl, x, y, v, w, a.BitPos(), rx, ry, rv, rw, b.BitPos())
				}
			}
		}
	}
}

// The tables are made at first use; these tests call the package's functions directly.
func init() { Prepare() }
