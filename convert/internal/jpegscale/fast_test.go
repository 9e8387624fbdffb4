package jpegscale

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestIdctQuarter_SameAsIdctScaled: idctQuarter gives idctScaled's integers at shift 2 for
// sparse and dense blocks, extreme coefficients and quantizers (zeros included), so 1/4-scale
// pixels are the same as before it existed (200,000 blocks, 20,000 with -short).
func TestIdctQuarter_SameAsIdctScaled(t *testing.T) {
	if !quarterSymmetric {
		t.Fatal("scaledMatrix[2] lacks the symmetry idctQuarter needs")
	}
	rng := rand.New(rand.NewPCG(31, 2))
	pick := func(r int) int32 {
		switch rng.IntN(8) {
		case 0:
			return 0
		case 1:
			return int32(rng.IntN(2*r+1) - r)
		case 2:
			return []int32{-32768, 32767, -1 << 30, 1 << 30, -1 << 31, 1<<31 - 1}[rng.IntN(6)]
		default:
			return int32(rng.IntN(33) - 16)
		}
	}
	blocks := 200000
	if testing.Short() {
		blocks = 20000
	}
	for n := 0; n < blocks; n++ {
		var b, q block
		density := rng.IntN(65)
		for i := range b {
			if rng.IntN(64) < density || i == 0 {
				b[i] = pick(2048)
			}
			q[i] = pick(255)
			if q[i] < 0 && rng.IntN(2) == 0 {
				q[i] = -q[i]
			}
		}
		if n%4 == 0 { // DC only, or DC plus a zero-quantized AC
			b = block{0: b[0]}
			if n%8 == 0 {
				k := 1 + rng.IntN(63)
				b[k], q[k] = pick(2048), 0
			}
		}
		last := int32(0) // the highest zig-zag index of a non-zero coefficient, as the decoder passes it
		for z := range blockSize {
			if b[unzig[z]] != 0 {
				last = int32(z)
			}
		}
		if n%16 == 1 {
			last = blockSize - 1 // not known (progressive)
		}
		want, got := b, b
		idctScaled(&want, &q, 2)
		d := &decoder{}
		d.quantNat[0] = q
		d.setQuantQuarter(0)
		idctQuarter(&got, &q, &d.quantQuarter[0], last)
		if [4]int32(want[:4]) != [4]int32(got[:4]) {
			t.Fatalf("block %v q %v: idctQuarter %v, idctScaled %v", b, q, got[:4], want[:4])
		}
	}
}

// TestHuffmanFast_SameAsSlowPath: for every table in the sample files, the photo, and
// random (often malformed) DHT segments (2,000 tables in all, 200 with -short), each fast entry says what decodeHuffman, then
// receiveExtend when it claims the extra bits too, read from the same bits and how many bits
// they consume; a zero entry is where the fast path defers to them.
func TestHuffmanFast_SameAsSlowPath(t *testing.T) {
	var tables []*huffman
	files := samples(t)
	files["photo"] = photoJPEG(t, 64, 48, 85)
	for name, data := range files {
		// Walk the file's DHT segments.
		for i := 2; i+4 <= len(data); {
			if data[i] != 0xff {
				break
			}
			marker, n := data[i+1], int(data[i+2])<<8|int(data[i+3])
			if marker == 0xda || n < 2 || i+2+n > len(data) {
				break
			}
			if marker == 0xc4 {
				d := &decoder{r: bytes.NewReader(data[i+4 : i+2+n])}
				if err := d.processDHT(n - 2); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for tc := range d.huff {
					for th := range d.huff[tc] {
						if d.huff[tc][th].nCodes != 0 {
							h := d.huff[tc][th]
							tables = append(tables, &h)
						}
					}
				}
			}
			i += 2 + n
		}
	}
	if len(tables) < 20 {
		t.Fatalf("only %d tables from the samples", len(tables))
	}
	rng := rand.New(rand.NewPCG(31, 9))
	want := 2000
	if testing.Short() {
		want = 200
	}
	for len(tables) < want {
		seg := []byte{0x10}
		total := 0
		for i := 0; i < 16; i++ {
			c := 0
			if rng.IntN(3) == 0 {
				c = rng.IntN(1 << min(i+1, 5))
			}
			if total+c > 200 {
				c = 0
			}
			total += c
			seg = append(seg, byte(c))
		}
		if total == 0 {
			continue
		}
		for i := 0; i < total; i++ {
			seg = append(seg, byte(rng.IntN(256)))
		}
		d := &decoder{r: bytes.NewReader(seg)}
		if err := d.processDHT(len(seg)); err != nil {
			t.Fatal(err)
		}
		h := d.huff[1][0]
		tables = append(tables, &h)
	}
	decided := 0
	for ti, h := range tables {
		for p := 0; p < 1<<fastBits; p++ {
			e := h.fast[p]
			if e == 0 {
				continue
			}
			decided++
			tail := uint64(rng.IntN(1 << 15))
			d := &decoder{}
			d.bits = bits{a: uint64(p)<<15 | tail, n: fastBits + 15, m: 1 << (fastBits + 14)}
			v, err := d.decodeHuffman(h)
			if err != nil {
				t.Fatalf("table %d, bits %09b: %v", ti, p, err)
			}
			used := fastBits + 15 - d.bits.n
			if v != uint8(e>>8) {
				t.Fatalf("table %d, bits %09b: value %#x, fast %#x", ti, p, v, uint8(e>>8))
			}
			if e&fastFull != 0 {
				x, err := d.receiveExtend(v & 0x0f)
				if err != nil {
					t.Fatal(err)
				}
				used = fastBits + 15 - d.bits.n
				if x != e>>16 {
					t.Fatalf("table %d, bits %09b: coefficient %d, fast %d", ti, p, x, e>>16)
				}
			}
			if used != e&fastLenMask || d.bits.m != 1<<(d.bits.n-1) {
				t.Fatalf("table %d, bits %09b: %d bits used, fast %d", ti, p, used, e&fastLenMask)
			}
		}
	}
	t.Logf("%d tables, %d fast entries checked", len(tables), decided)
}
