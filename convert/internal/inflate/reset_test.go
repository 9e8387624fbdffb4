package inflate

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"slices"
	"testing"
)

// A Reader Reset between streams decodes each as a new one does: the same output, the same
// error (message included) and the same reads of the source, whatever the stream before it
// left behind (dynamic tables, a cut in mid-block, a sticky error, a header error, Close).
func TestReader_ResetSameAsNew(t *testing.T) {
	var streams [][]byte
	for _, name := range []string{"photo", "text", "runs", "empty", "one", "random"} {
		data := samples()[name]
		if len(data) > 100_000 {
			data = data[:100_000]
		}
		for _, level := range []int{0, 1, 6, -2} {
			s := zlibAt(t, data, level)
			bad := bytes.Clone(s)
			bad[len(bad)/2] ^= 0x21
			streams = append(streams, s, s[:len(s)*2/3], bad)
		}
	}
	streams = append(streams, nil, []byte{0x78}, []byte{0x79, 0x01}, []byte{0x78, 0xbb, 0, 0, 0, 2}, []byte{0x78, 0x01, 0x07})
	var z *Reader
	reset := func(r io.Reader) (io.ReadCloser, error) {
		if z == nil {
			nz, err := NewReader(r)
			if err != nil {
				return nil, err
			}
			z = nz
			return noClose{z}, nil
		}
		if err := z.Reset(r); err != nil {
			return nil, err
		}
		return noClose{z}, nil
	}
	for round := range 2 {
		for i, s := range streams {
			for _, step := range []int{1000, 70_000} {
				want, werr, wt := decodeAll(ourOpen, bytes.NewReader(s), step)
				got, gerr, gt := decodeAll(reset, bytes.NewReader(s), step)
				what := fmt.Sprintf("round %d stream %d (%d bytes) step %d", round, i, len(s), step)
				if fmt.Sprint(gerr) != fmt.Sprint(werr) {
					t.Fatalf("%s: error %v, a new Reader's %v", what, gerr, werr)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s: %d bytes, a new Reader's %d (or other bytes)", what, len(got), len(want))
				}
				if !slices.Equal(gt.calls, wt.calls) {
					t.Fatalf("%s: reads of the source differ", what)
				}
			}
			if round == 1 && i%5 == 0 && z != nil {
				z.Close() // Reset after Close takes a buffer again
			}
		}
	}
}

// noClose leaves the Reader open, so the next stream Resets one that has decoded.
type noClose struct{ *Reader }

func (noClose) Close() error { return nil }

// Reset allocates no decoder state once the Reader has decoded streams of the same kind: no
// tables, input or output buffer (a fresh NewReader is about 40 KB and 320 KiB of output
// buffer); what remains are the few bytes of header and checksum reads (passed to src.Read,
// they escape), as with NewReader.
func TestReader_ResetAllocatesNothing(t *testing.T) {
	s := zlibAt(t, samples()["photo"][:50_000], 6)
	z, err := NewReader(bytes.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	src := bytes.NewReader(s)
	buf := make([]byte, 4096)
	decode := func() {
		src.Reset(s)
		if err := z.Reset(src); err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := z.Read(buf); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
	}
	decode()
	const runs = 50
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		decode()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 64 {
		t.Fatalf("%d bytes allocated a stream, want at most 64", per)
	}
}
