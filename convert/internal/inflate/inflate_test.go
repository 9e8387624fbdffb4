package inflate

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
)

// tracer records every Read a decoder makes of its source: the length asked for and the
// bytes returned. Two decoders that consume a stream the same way leave the same trace.
type tracer struct {
	r     io.Reader
	calls []readCall
}

// readCall is one Read: the length asked for, the bytes returned, the error.
type readCall struct {
	asked, got int
	err        error
}

func (t *tracer) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.calls = append(t.calls, readCall{len(p), n, err})
	return n, err
}

// chunky returns at most max bytes per Read, as a PNG's IDAT reader does at chunk ends.
type chunky struct {
	r   io.Reader
	max int
}

func (c chunky) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.max)]) }

// decodeAll reads everything from a decoder opened by open over src, in reads of step
// bytes (as pngstream reads rows), and returns the output, the error and the source trace.
func decodeAll(open func(io.Reader) (io.ReadCloser, error), src io.Reader, step int) ([]byte, error, *tracer) {
	t := &tracer{r: src}
	r, err := open(t)
	if err != nil {
		return nil, err, t
	}
	var out []byte
	buf := make([]byte, step)
	for {
		n, err := io.ReadFull(r, buf)
		out = append(out, buf[:n]...)
		if err != nil {
			if err == io.ErrUnexpectedEOF && n > 0 {
				_, err = r.Read(buf[:1])
				if err == io.EOF {
					err = nil
				}
			} else if err == io.EOF {
				err = nil
			}
			return out, err, t
		}
	}
}

func stdOpen(r io.Reader) (io.ReadCloser, error) { return zlib.NewReader(r) }
func ourOpen(r io.Reader) (io.ReadCloser, error) {
	z, err := NewReader(r)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return z, nil
}

// compare decodes stream with compress/zlib and with this package: both must fail, or both
// succeed with the same output after the same reads of the source.
func compare(t *testing.T, stream []byte, maxRead, step int) {
	t.Helper()
	src := func() io.Reader { return chunky{bytes.NewReader(stream), maxRead} }
	want, werr, wt := decodeAll(stdOpen, src(), step)
	got, gerr, gt := decodeAll(ourOpen, src(), step)
	switch {
	case werr != nil && gerr != nil:
		return
	case werr != nil:
		t.Fatalf("compress/zlib failed (%v), inflate succeeded", werr)
	case gerr != nil:
		t.Fatalf("inflate failed (%v), compress/zlib succeeded", gerr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("output differs: %d bytes, want %d", len(got), len(want))
	}
	if !slices.Equal(gt.calls, wt.calls) {
		t.Fatalf("reads of the source differ:\n got %v\nwant %v", gt.calls, wt.calls)
	}
}

// samples are payloads that exercise every block type: photo-like rows, text, runs,
// random bytes (stored blocks at most levels), and the empty stream.
func samples() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	photo := make([]byte, 600_000)
	v := 128.0
	for i := range photo {
		v += rng.NormFloat64() * 6
		v = max(0, min(255, v))
		photo[i] = byte(v)
		if i%3001 == 0 {
			photo[i] = byte(i / 3001 % 5) // a filter byte
		}
	}
	random := make([]byte, 200_000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog, 0123456789. "), 5000)
	runs := make([]byte, 300_000)
	for i := range runs {
		runs[i] = byte(i / 7000)
	}
	return map[string][]byte{"photo": photo, "random": random, "text": text, "runs": runs, "empty": nil, "one": {42}}
}

func zlibAt(t testing.TB, data []byte, level int) []byte {
	var buf bytes.Buffer
	w, err := zlib.NewWriterLevel(&buf, level)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	w.Close()
	return buf.Bytes()
}

func TestReader_SameAsCompressZlib(t *testing.T) {
	for name, data := range samples() {
		for _, level := range []int{zlib.NoCompression, zlib.BestSpeed, 5, zlib.BestCompression, zlib.HuffmanOnly} {
			stream := zlibAt(t, data, level)
			for _, maxRead := range []int{1, 7, 4096, 8192, 1 << 20} {
				if testing.Short() && maxRead < 4096 && len(stream) > 10_000 {
					continue // a Read per byte or seven: slow under -race, and the rest cover it
				}
				for _, step := range []int{1, 3001, 65536} {
					t.Run(fmt.Sprintf("%s/level%d/read%d/step%d", name, level, maxRead, step), func(t *testing.T) {
						compare(t, stream, maxRead, step)
						got, err, _ := decodeAll(ourOpen, chunky{bytes.NewReader(stream), maxRead}, step)
						if err != nil || !bytes.Equal(got, data) {
							t.Fatalf("round trip: %d bytes, %v", len(got), err)
						}
					})
				}
			}
		}
	}
}

// TestReader_Errors checks each way a stream can be wrong gives compress/zlib's error value.
func TestReader_Errors(t *testing.T) {
	good := zlibAt(t, bytes.Repeat([]byte("abcdefgh"), 10000), 6)
	flip := func(i int, mask byte) []byte {
		b := bytes.Clone(good)
		b[i] ^= mask
		return b
	}
	for _, tc := range []struct {
		name   string
		stream []byte
		want   error
	}{
		{"empty", nil, io.ErrUnexpectedEOF},
		{"bad method", flip(0, 0x01), zlib.ErrHeader},
		{"bad check bits", flip(1, 0x01), zlib.ErrHeader},
		{"preset dictionary", []byte{0x78, 0xbb, 0, 0, 0, 2}, zlib.ErrDictionary},
		{"checksum", flip(len(good)-1, 0x01), zlib.ErrChecksum},
		{"cut in the data", good[:len(good)/2], io.ErrUnexpectedEOF},
		{"cut in the checksum", good[:len(good)-2], io.ErrUnexpectedEOF},
		{"reserved block type", []byte{0x78, 0x01, 0x07}, nil},
		{"stored length check", []byte{0x78, 0x01, 0x01, 0x05, 0x00, 0xfa, 0xfe}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, werr, _ := decodeAll(stdOpen, bytes.NewReader(tc.stream), 4096)
			_, gerr, _ := decodeAll(ourOpen, bytes.NewReader(tc.stream), 4096)
			if gerr == nil || werr == nil {
				t.Fatalf("errors: inflate %v, compress/zlib %v", gerr, werr)
			}
			if tc.want != nil && (!errors.Is(gerr, tc.want) || !errors.Is(werr, tc.want)) {
				t.Fatalf("inflate %v, compress/zlib %v, want %v", gerr, werr, tc.want)
			}
			var corrupt flate.CorruptInputError
			if tc.want == nil && !errors.As(gerr, &corrupt) {
				t.Fatalf("inflate %v, want a flate.CorruptInputError", gerr)
			}
		})
	}
}

// TestReader_DistanceTooFar: a match reaching before the start of the output is corrupt.
func TestReader_DistanceTooFar(t *testing.T) {
	// Fixed block: literal 'a', then length 3 at distance 2 (only 1 byte decoded).
	var bw bitWriter
	bw.put(1, 1) // final
	bw.put(1, 2) // fixed
	bw.putCode(0x30+'a', 8)
	bw.putCode(1, 7) // length symbol 257: length 3
	bw.putCode(1, 5) // distance symbol 1: distance 2
	bw.putCode(0, 7) // end of block
	stream := append([]byte{0x78, 0x01}, bw.bytes()...)
	stream = append(stream, 0, 0, 0, 0)
	_, werr, _ := decodeAll(stdOpen, bytes.NewReader(stream), 10)
	_, gerr, _ := decodeAll(ourOpen, bytes.NewReader(stream), 10)
	if werr == nil || gerr == nil {
		t.Fatalf("inflate %v, compress/zlib %v: both must fail", gerr, werr)
	}
}

// TestReader_ReusesClosedBuffer: a decoder gets the output buffer a closed one gave back, and
// what the earlier stream left in it changes nothing: a match reaching before the new
// stream's start is still corrupt, a good stream decodes as compress/zlib decodes it. A
// closed decoder's Read fails.
func TestReader_ReusesClosedBuffer(t *testing.T) {
	var bw bitWriter // a literal 'a', then length 3 at distance 2: before the start
	bw.put(1, 1)
	bw.put(1, 2)
	bw.putCode(0x30+'a', 8)
	bw.putCode(1, 7)
	bw.putCode(1, 5)
	bw.putCode(0, 7)
	tooFar := append(append([]byte{0x78, 0x01}, bw.bytes()...), 0, 0, 0, 0)
	big := samples()["photo"]
	good := zlibAt(t, []byte("abcabcabc"), 9)
	want, _, _ := decodeAll(stdOpen, bytes.NewReader(good), 7)

	reused := false
	for range 20 { // sync.Pool may drop what it was given (the race detector does so on purpose)
		first, err := NewReader(bytes.NewReader(zlibAt(t, big, 6)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, first); err != nil {
			t.Fatal(err)
		}
		buf := &first.out[0]
		first.Close()
		if n, err := first.Read(make([]byte, 10)); n != 0 || err != errClosed {
			t.Fatalf("Read after Close = %d, %v; want 0, errClosed", n, err)
		}
		first.Close() // a second Close gives nothing back twice
		z, err := NewReader(bytes.NewReader(tooFar))
		if err != nil {
			t.Fatal(err)
		}
		reused = reused || &z.out[0] == buf
		if _, err := io.Copy(io.Discard, z); !errors.As(err, new(flate.CorruptInputError)) {
			t.Fatalf("distance before the start, in a reused buffer: %v, want a flate.CorruptInputError", err)
		}
		z.Close()
		got, err, _ := decodeAll(ourOpen, bytes.NewReader(good), 7)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("after reuse: %q, %v; want %q", got, err, want)
		}
		if reused {
			return
		}
	}
	t.Fatal("no decoder got a closed decoder's buffer in 20 tries")
}

// bitWriter packs DEFLATE fields, least significant bit first, Huffman codes reversed.
type bitWriter struct {
	b  []byte
	nb uint
}

func (w *bitWriter) put(v uint32, n uint) {
	for i := uint(0); i < n; i++ {
		if w.nb%8 == 0 {
			w.b = append(w.b, 0)
		}
		w.b[len(w.b)-1] |= byte(v>>i&1) << (w.nb % 8)
		w.nb++
	}
}

func (w *bitWriter) putCode(code uint32, n uint) { w.put(uint32(reverse(int(code), int(n))), n) }

func (w *bitWriter) bytes() []byte { return w.b }

// FuzzZlib is differential against compress/zlib: for any stream both fail, or both succeed
// with the same output after the same reads of the source. Seeds: testdata/fuzz/FuzzZlib
// plus streams built here.
//
//	go test ./convert/internal/inflate -run XXX -fuzz FuzzZlib -fuzztime 3m
func FuzzZlib(f *testing.F) {
	for _, data := range samples() {
		for _, level := range []int{zlib.NoCompression, zlib.BestSpeed, zlib.HuffmanOnly} {
			stream := zlibAt(f, data[:min(len(data), 3000)], level)
			f.Add(stream, uint16(4096), uint16(7))
		}
	}
	f.Fuzz(func(t *testing.T, stream []byte, maxRead, step uint16) {
		compare(t, stream, int(maxRead%9000)+1, int(step%5000)+1)
	})
}

// TestAdler32Update: the eight-at-a-time checksum equals hash/adler32's for every length
// around the reduction block, starting sums near the modulus, and all-0xff data (the largest
// sums), whole and in pieces.
func TestAdler32Update(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 3*adlerNMax+17)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	ff := bytes.Repeat([]byte{0xff}, 3*adlerNMax+17)
	for _, src := range [][]byte{data, ff} {
		for _, n := range []int{0, 1, 7, 8, 9, 63, adlerNMax - 1, adlerNMax, adlerNMax + 1, 2*adlerNMax + 5, len(src)} {
			if got, want := adler32Update(1, src[:n]), adler32.Checksum(src[:n]); got != want {
				t.Fatalf("%d bytes: %08x, want %08x", n, got, want)
			}
			// In two pieces, the first ending anywhere.
			cut := rng.IntN(n + 1)
			if got, want := adler32Update(adler32Update(1, src[:cut]), src[cut:n]), adler32.Checksum(src[:n]); got != want {
				t.Fatalf("%d bytes cut at %d: %08x, want %08x", n, cut, got, want)
			}
		}
	}
	// Sums just below the modulus to start with, against RFC 1950's definition step by step.
	start := uint32(adlerMod-1)<<16 | (adlerMod - 1)
	want := func(adler uint32, p []byte) uint32 {
		s1, s2 := adler&0xffff, adler>>16
		for _, c := range p {
			s1 = (s1 + uint32(c)) % adlerMod
			s2 = (s2 + s1) % adlerMod
		}
		return s2<<16 | s1
	}
	for _, n := range []int{8, adlerNMax, adlerNMax + 8, len(ff)} {
		if got, w := adler32Update(start, ff[:n]), want(start, ff[:n]); got != w {
			t.Fatalf("from %08x, %d bytes of 0xff: %08x, want %08x", start, n, got, w)
		}
	}
}
