package tiffstrip

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"image"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"golang.org/x/image/tiff"
)

// zlibStream compresses data with compress/zlib at level.
func zlibStream(t testing.TB, data []byte, level int) []byte {
	var b bytes.Buffer
	w, err := zlib.NewWriterLevel(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	w.Close()
	return b.Bytes()
}

// readStrip reads r in pieces of at most step bytes until io.EOF or the first other error,
// as tiffstrip reads a strip (rows, then the rest): the bytes and that error.
func readStrip(r io.Reader, step int) ([]byte, error) {
	var out []byte
	buf := make([]byte, step)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// inflateBoth reads stream as a strip with a limit both ways: openDeflate, and
// io.LimitReader(zlib.NewReader(strip), limit) as tiffstrip did before and x/image/tiff does.
func inflateBoth(stream []byte, limit int64, step int) (got, want []byte, gerr, werr error) {
	r := bytes.NewReader(stream)
	n := int64(len(stream))
	if zr, err := zlib.NewReader(io.NewSectionReader(r, 0, n)); err != nil {
		werr = err
	} else {
		want, werr = readStrip(io.LimitReader(zr, limit), step)
		zr.Close()
	}
	if d, err := openDeflate(r, 0, n, limit); err != nil {
		gerr = err
	} else {
		got, gerr = readStrip(d, step)
		d.Close()
	}
	return got, want, gerr, werr
}

// sameStrip fails t unless openDeflate gives compress/zlib's bytes and error (type and
// message, so a flate.CorruptInputError's offset too) for stream under limit.
func sameStrip(t *testing.T, stream []byte, limit int64, step int) {
	t.Helper()
	got, want, gerr, werr := inflateBoth(stream, limit, step)
	if fmt.Sprintf("%T %v", gerr, gerr) != fmt.Sprintf("%T %v", werr, werr) {
		t.Fatalf("limit %d, reads of %d: error %T %q, compress/zlib %T %q", limit, step, gerr, gerr, werr, werr)
	}
	// A failed strip's bytes are never used, and before the error inflate may give a few more
	// than compress/zlib (see openDeflate); as far as both go they are the same.
	if n := min(len(got), len(want)); !bytes.Equal(got[:n], want[:n]) || werr == nil && len(got) != len(want) {
		t.Fatalf("limit %d, reads of %d: %d bytes, compress/zlib %d (error %v)", limit, step, len(got), len(want), werr)
	}
}

// deflateSamples are payloads that make every kind of block: photo-like rows (stored by
// predictor differences), random bytes (stored blocks), runs (long matches), text; some sized
// to end exactly on compress/flate's 32 KiB window, where it hands over its output.
func deflateSamples() map[string][]byte {
	rng := rand.New(rand.NewPCG(7, 8))
	photo := make([]byte, 70_000)
	v := 128.0
	for i := range photo {
		v = max(0, min(255, v+rng.NormFloat64()*6))
		photo[i] = byte(v)
	}
	random := make([]byte, 40_000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	runs := make([]byte, 65_536)
	for i := range runs {
		runs[i] = byte(i / 5000)
	}
	return map[string][]byte{
		"photo":  photo,
		"random": random,
		"runs":   runs,
		"text":   bytes.Repeat([]byte("deflate strips of a TIFF. "), 1261)[:32_768],
		"one":    {42},
		"empty":  nil,
	}
}

// damaged returns stream whole and broken in each way a strip can be: cut anywhere (in the
// header, a block, the checksum), a flipped byte in the data, a wrong Adler-32, trailing
// bytes, a bad header and a preset dictionary flag.
func damaged(stream []byte) map[string][]byte {
	flip := func(i int, mask byte) []byte {
		b := bytes.Clone(stream)
		b[i] ^= mask
		return b
	}
	m := map[string][]byte{
		"whole":    stream,
		"cut-0":    stream[:0],
		"cut-1":    stream[:1],
		"cut-2":    stream[:2],
		"cut-3rd":  stream[:len(stream)/3],
		"cut-half": stream[:len(stream)/2],
		"cut-sum":  stream[:len(stream)-2],
		"no-sum":   stream[:len(stream)-4],
		"adler":    flip(len(stream)-1, 1),
		"trailing": append(bytes.Clone(stream), "trailing bytes"...),
		"header":   flip(0, 1),
		"dict":     flip(1, 0x20),
	}
	if len(stream) > 12 {
		m["flip-mid"] = flip(len(stream)/2, 0x5a)
		m["flip-early"] = flip(3, 0xff)
	}
	return m
}

// TestDeflateStrip_SameAsCompressZlib: for whole and broken streams at every compression
// level, limits below, at and past the output's length and several read sizes, openDeflate
// gives compress/zlib's bytes and error exactly.
func TestDeflateStrip_SameAsCompressZlib(t *testing.T) {
	for name, data := range deflateSamples() {
		for _, level := range []int{zlib.NoCompression, zlib.BestSpeed, zlib.DefaultCompression, zlib.BestCompression, zlib.HuffmanOnly} {
			for dmg, stream := range damaged(zlibStream(t, data, level)) {
				t.Run(fmt.Sprintf("%s/level%d/%s", name, level, dmg), func(t *testing.T) {
					for _, limit := range []int64{1, int64(len(data)) / 2, int64(len(data)) - 1, int64(len(data)), int64(len(data)) + 1, 1 << 30} {
						for _, step := range []int{7, 4096, 1 << 17} {
							if limit > 0 {
								sameStrip(t, stream, limit, step)
							}
						}
					}
				})
			}
		}
	}
}

// TestDeflateStrip_ErrorAtTheLimit pins down the case that needs compress/zlib's own answer:
// a stream whose last output byte is the limit's and whose checksum is wrong. compress/zlib
// reports the error with the last bytes, unless compress/flate handed them over when its
// 32 KiB window filled, before it read on to the checksum: a 512-byte strip fails, a
// 32768-byte one does not (and x/image/tiff agrees, TestDecode_DeflateBadChecksumAtTheLimit).
func TestDeflateStrip_ErrorAtTheLimit(t *testing.T) {
	for _, tc := range []struct {
		size    int
		wantErr error
	}{{512, zlib.ErrChecksum}, {32768, nil}, {65536, nil}, {1000, zlib.ErrChecksum}} {
		data := bytes.Repeat([]byte{1, 2, 3, 5, 8, 13, 21, 34}, tc.size/8)
		stream := zlibStream(t, data, zlib.BestSpeed)
		stream[len(stream)-1] ^= 1
		for _, step := range []int{1, 512, 8192} {
			got, _, gerr, _ := inflateBoth(stream, int64(tc.size), step)
			if gerr != tc.wantErr || !bytes.Equal(got, data) {
				t.Errorf("%d bytes, reads of %d: %d bytes, error %v; want %d, %v", tc.size, step, len(got), gerr, len(data), tc.wantErr)
			}
			sameStrip(t, stream, int64(tc.size), step)
			// One byte less: the error is past the limit; one more: before it.
			sameStrip(t, stream, int64(tc.size-1), step)
			sameStrip(t, stream, int64(tc.size+1), step)
		}
	}
}

// TestDeflateStrip_CutAnywhere: a stream cut at every byte, under limits around what
// compress/zlib gives before its error. Inflate decodes a few more bytes of a cut stream
// than compress/flate does, so a limit there is where openDeflate must not take inflate's
// word that more follows.
func TestDeflateStrip_CutAnywhere(t *testing.T) {
	data := pixels(60, 10, 3)
	for _, level := range []int{zlib.NoCompression, zlib.BestSpeed, zlib.BestCompression} {
		stream := zlibStream(t, data, level)
		for cut := range len(stream) {
			n := 0
			if zr, err := zlib.NewReader(bytes.NewReader(stream[:cut])); err == nil {
				b, _ := io.ReadAll(zr)
				n = len(b)
			}
			for _, limit := range []int64{int64(n) - 1, int64(n), int64(n) + 1, int64(n) + 2} {
				if limit > 0 {
					sameStrip(t, stream[:cut], limit, 4096)
				}
			}
		}
	}
}

// rebuildWithStrip writes a one-strip TIFF of layout l whose strip is stream as given.
func rebuildWithStrip(t testing.TB, w, h int, l layout, stream []byte) []byte {
	head := []byte("II\x2A\x00\x00\x00\x00\x00")
	out := append(head, stream...)
	entries := [][4]uint32{
		{tImageWidth, 4, 1, uint32(w)},
		{tImageLength, 4, 1, uint32(h)},
		{tBitsPerSample, 3, 1, 8},
		{tCompression, 3, 1, uint32(l.compression)},
		{tPhotometricInterpretation, 3, 1, uint32(l.photometric)},
		{tStripOffsets, 4, 1, 8},
		{277, 3, 1, 1},
		{tRowsPerStrip, 4, 1, uint32(h)},
		{tStripByteCounts, 4, 1, uint32(len(stream))},
	}
	if len(out)%2 == 1 {
		out = append(out, 0)
	}
	ifd := len(out)
	out = append(out, byte(len(entries)), 0)
	for _, e := range entries {
		var b [12]byte
		b[0], b[1] = byte(e[0]), byte(e[0]>>8)
		b[2] = byte(e[1])
		b[4] = byte(e[2])
		if e[1] == 3 {
			b[8], b[9] = byte(e[3]), byte(e[3]>>8)
		} else {
			b[8], b[9], b[10], b[11] = byte(e[3]), byte(e[3]>>8), byte(e[3]>>16), byte(e[3]>>24)
		}
		out = append(out, b[:]...)
	}
	out = append(out, 0, 0, 0, 0)
	out[4], out[5], out[6], out[7] = byte(ifd), byte(ifd>>8), byte(ifd>>16), byte(ifd>>24)
	return out
}

// sameAsXImage decodes data with tiffstrip and x/image/tiff: the same pixels, or the same
// error message.
func sameAsXImage(t *testing.T, data []byte) (last error) {
	t.Helper()
	want, werr := tiff.Decode(bytes.NewReader(data))
	for _, k := range []int{1, 64} {
		d, ok, err := NewDecoder(bytes.NewReader(data), int64(len(data)))
		if !ok || err != nil {
			t.Fatalf("NewDecoder: ok %v, err %v", ok, err)
		}
		got, gerr := decodeStrips(d, k)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("strips of %d rows: error %q, x/image/tiff %q", k, gerr, werr)
		}
		if gerr == nil && !bytes.Equal(got.(*image.Gray).Pix, want.(*image.Gray).Pix) {
			t.Fatalf("strips of %d rows: pixels differ from x/image/tiff's", k)
		}
		last = gerr
	}
	return last
}

// TestDecode_DeflateErrorsSameAsXImage: a deflate strip broken in every way fails with
// x/image/tiff's message (a corrupt stream's offset included), and trailing bytes after the
// checksum are ignored as x/image/tiff ignores them.
func TestDecode_DeflateErrorsSameAsXImage(t *testing.T) {
	const w, h = 40, 30
	pix := pixels(w, h, 1)
	for _, level := range []int{zlib.NoCompression, zlib.BestSpeed, zlib.BestCompression} {
		for name, stream := range damaged(zlibStream(t, pix, level)) {
			t.Run(fmt.Sprintf("level%d/%s", level, name), func(t *testing.T) {
				err := sameAsXImage(t, rebuildWithStrip(t, w, h, layout{1, 1, 0, 8, 0, 0, false}, stream))
				if (name == "whole" || name == "trailing") != (err == nil) {
					t.Fatalf("error %v", err)
				}
			})
		}
	}
	// A strip with fewer rows than the image needs: x/image/tiff's errNoPixels.
	short := rebuildWithStrip(t, w, h, layout{1, 1, 0, 8, 0, 0, false}, zlibStream(t, pix[:w*h-1], 6))
	if err := sameAsXImage(t, short); !errors.Is(err, errNoPixels) {
		t.Fatalf("short strip: %v, want %v", err, errNoPixels)
	}
}

// TestDecode_DeflateBadChecksumAtTheLimit: a strip that inflates to exactly x/image/tiff's
// limit (width*rows*8 bytes) with a wrong Adler-32 fails or not as x/image/tiff does, which
// depends on where compress/flate's window hands over output (TestDeflateStrip_ErrorAtTheLimit).
func TestDecode_DeflateBadChecksumAtTheLimit(t *testing.T) {
	for _, tc := range []struct {
		w, h int
		fail bool
	}{{8, 8, true}, {64, 64, false}, {10, 5, true}} {
		limit := tc.w * tc.h * 8
		data := pixels(limit, 1, 1)
		stream := zlibStream(t, data, zlib.BestSpeed)
		stream[len(stream)-1] ^= 1
		err := sameAsXImage(t, rebuildWithStrip(t, tc.w, tc.h, layout{1, 1, 0, 8, 0, 0, false}, stream))
		if (err != nil) != tc.fail {
			t.Errorf("%dx%d: error %v, want failure %v", tc.w, tc.h, err, tc.fail)
		}
	}
}

// FuzzDeflateStrip feeds any zlib stream, limit and read size to openDeflate and to
// compress/zlib under io.LimitReader (tiffstrip's reads before, x/image/tiff's): the same
// bytes and the same error, type and message. Seeds: testdata/fuzz/FuzzDeflateStrip
// (TIFFSTRIP_WRITE_SEEDS=1 go test -run TestWriteDeflateSeeds rewrites them) and the streams
// of TestDeflateStrip_SameAsCompressZlib's small samples.
//
//	go test ./convert/internal/tiffstrip -run XXX -fuzz FuzzDeflateStrip -fuzztime 60s
func FuzzDeflateStrip(f *testing.F) {
	for _, s := range deflateSeeds(f) {
		f.Add(s.stream, s.limit, s.step)
	}
	f.Fuzz(func(t *testing.T, stream []byte, limit uint32, step uint16) {
		sameStrip(t, stream, int64(limit%(1<<20))+1, int(step%9000)+1)
	})
}

type deflateSeed struct {
	name   string
	stream []byte
	limit  uint32
	step   uint16
}

// deflateSeeds are short streams of each block type, whole and broken, at limits around
// their output's length.
func deflateSeeds(t testing.TB) []deflateSeed {
	var seeds []deflateSeed
	for name, data := range map[string][]byte{
		"photo": pixels(60, 10, 3),
		"runs":  bytes.Repeat([]byte{7}, 700),
		"one":   {42},
	} {
		for _, level := range []int{zlib.NoCompression, zlib.BestSpeed, zlib.HuffmanOnly} {
			for dmg, stream := range damaged(zlibStream(t, data, level)) {
				if dmg != "whole" && dmg != "adler" && dmg != "cut-half" && dmg != "flip-mid" {
					continue
				}
				n := uint32(len(data)) - 1 // the fuzz limit is limit+1
				seeds = append(seeds, deflateSeed{fmt.Sprintf("%s-level%d-%s", name, level, dmg), stream, n, 511})
			}
		}
	}
	return seeds
}

// TestWriteDeflateSeeds writes deflateSeeds to testdata/fuzz/FuzzDeflateStrip.
func TestWriteDeflateSeeds(t *testing.T) {
	if os.Getenv("TIFFSTRIP_WRITE_SEEDS") == "" {
		t.Skip("set TIFFSTRIP_WRITE_SEEDS=1 to rewrite the seeds")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDeflateStrip")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range deflateSeeds(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\nuint32(%d)\nuint16(%d)\n", strconv.Quote(string(s.stream)), s.limit, s.step)
		if err := os.WriteFile(filepath.Join(dir, "seed-"+s.name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzDeflateTIFF decodes any input that tiffstrip takes as a deflate TIFF with tiffstrip
// and x/image/tiff: the same image, or the same error message (FuzzStripDecode asks only
// that both fail), and with Prefetch the same as without. Seeds: the deflate layouts of allLayouts, small.
//
//	go test ./convert/internal/tiffstrip -run XXX -fuzz FuzzDeflateTIFF -fuzztime 60s
func FuzzDeflateTIFF(f *testing.F) {
	for _, l := range allLayouts() {
		if l.compression == cDeflate {
			f.Add(buildTIFF(f, 5, 4, l, pixels(5, 4, l.samples)))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := tiff.DecodeConfig(bytes.NewReader(data))
		if err != nil || cfg.Width*cfg.Height > 1<<16 {
			return
		}
		d, ok, err := NewDecoder(bytes.NewReader(data), int64(len(data)))
		if !ok || err != nil || (d.compression != cDeflate && d.compression != cDeflateOld) {
			return
		}
		want, werr := tiff.Decode(bytes.NewReader(data))
		got, gerr := decodeStrips(d, 3)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("error %q, x/image/tiff %q", gerr, werr)
		}
		if gerr == nil && !reflect.DeepEqual(got, want) {
			t.Fatal("pixels differ from x/image/tiff's")
		}
		samePrefetched(t, data)
	})
}
