package inflate

import (
	"bytes"
	"encoding/binary"
	"image/png"
	"io"
	"sync"
	"testing"

	"github.com/convsvc/convsvc/convert/internal/testimg"
	"github.com/convsvc/convsvc/internal/cputime"
)

// photoIDAT is the zlib stream of a 1000x1000 testimg.Photo as image/png writes it (RGB,
// default level: a dynamic block every ~16K symbols), and its filtered row length.
var photoIDAT = sync.OnceValues(func() ([]byte, int) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, testimg.Photo(1000, 1000)); err != nil {
		panic(err)
	}
	data := buf.Bytes()
	var z []byte
	for p := 8; p+8 <= len(data); {
		n := int(binary.BigEndian.Uint32(data[p:]))
		if string(data[p+4:p+8]) == "IDAT" {
			z = append(z, data[p+8:p+8+n]...)
		}
		p += 12 + n
	}
	return z, 1 + 3*1000
})

// BenchmarkReader_Photo1MP inflates photoIDAT row by row, as pngstream does.
//
//	go test ./convert/internal/inflate -run XXX -bench Photo -count 6
func BenchmarkReader_Photo1MP(b *testing.B) {
	z, rowLen := photoIDAT()
	b.SetBytes(int64(len(z)))
	b.ReportAllocs()
	row := make([]byte, rowLen)
	cpu0 := cputime.Self()
	for b.Loop() {
		zr, err := NewReader(bytes.NewReader(z))
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := io.ReadFull(zr, row); err != nil {
				if err == io.EOF {
					break
				}
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(cputime.Self()-cpu0)/float64(b.N), "cpu-ns/op")
}

// headerState is the decoder's input state at the start of a dynamic block's header.
type headerState struct {
	in       [unitSize]byte
	pos, end int
	bb       uint64
	nb       uint
}

// dynamicHeaders returns the input state before every dynamic block header of photoIDAT
// that is read without a further Read of the source.
func dynamicHeaders(t testing.TB) []headerState {
	z, _ := photoIDAT()
	src := &tracer{r: bytes.NewReader(z)}
	d, err := NewReader(src)
	if err != nil {
		t.Fatal(err)
	}
	var states []headerState
	for {
		if !d.inBlock {
			if d.final {
				return states
			}
			s := headerState{in: d.in, pos: d.pos, end: d.end, bb: d.bb, nb: d.nb}
			reads := len(src.calls)
			if err := d.blockHeader(); err != nil {
				t.Fatal(err)
			}
			if d.lit == &d.dynLit && len(src.calls) == reads {
				states = append(states, s)
			}
			continue
		}
		if d.w >= outLimit {
			d.r = d.w
			d.slide()
		}
		if d.lit == nil {
			err = d.copyStored()
		} else {
			err = d.huffman()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkDynamicTables reads photoIDAT's dynamic block headers and builds their tables.
//
//	go test ./convert/internal/inflate -run XXX -bench DynamicTables -count 6
func BenchmarkDynamicTables(b *testing.B) {
	states := dynamicHeaders(b)
	d := &Reader{}
	cpu0 := cputime.Self()
	for b.Loop() {
		for i := range states {
			s := &states[i]
			d.in, d.pos, d.end, d.bb, d.nb = s.in, s.pos, s.end, s.bb, s.nb
			if err := d.blockHeader(); err != nil {
				b.Fatal(err)
			}
		}
	}
	// CPU time moves less than wall time on a shared machine.
	b.ReportMetric(float64(cputime.Self()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkAdler32Update checksums 600 KB of photo-like rows.
//
//	go test ./convert/internal/inflate -run XXX -bench Adler -count 6
func BenchmarkAdler32Update(b *testing.B) {
	data := samples()["photo"]
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		adler32Update(1, data)
	}
}
