package tiffstrip

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"golang.org/x/image/tiff"
)

// layout is a TIFF the tests write: samples per pixel, photometric, extra samples,
// compression, predictor and rows per strip.
type layout struct {
	samples, photometric, extra int
	compression, predictor      int
	rowsPerStrip                int
	bigEndian                   bool
}

func (l layout) String() string {
	return fmt.Sprintf("s%d-p%d-e%d-c%d-pr%d-rps%d-be%v", l.samples, l.photometric, l.extra, l.compression, l.predictor, l.rowsPerStrip, l.bigEndian)
}

// pixels returns w*h*samples sample bytes of a pattern with gradients and noise.
func pixels(w, h, samples int) []byte {
	p := make([]byte, w*h*samples)
	for i := range p {
		x, y := (i/samples)%w, (i/samples)/w
		p[i] = byte(x*3 + y*5 + (i%samples)*40 + (i*7919>>3)%11)
	}
	return p
}

// buildTIFF writes a baseline striped TIFF of the samples in l's layout, compressing each
// strip (with the predictor's differences) itself, and extra IFD entries (sorted in).
func buildTIFF(t testing.TB, w, h int, l layout, samples []byte, extra ...[3]uint32) []byte {
	order, out := newTIFF(l)
	rowLen := w * l.samples
	rps := l.rowsPerStrip
	if rps <= 0 || rps > h {
		rps = h
	}
	var offsets, counts []uint32
	for y0 := 0; y0 < h; y0 += rps {
		data := encodeBlock(l, samples[y0*rowLen:min(y0+rps, h)*rowLen], rowLen)
		offsets = append(offsets, uint32(out.Len()))
		counts = append(counts, uint32(len(data)))
		out.Write(data)
	}
	return finishTIFF(out, order, w, h, l, [][4]uint32{
		{tStripOffsets, 4, uint32(len(offsets)), writeArray(out, order, offsets)},
		{tRowsPerStrip, 4, 1, uint32(rps)},
		{tStripByteCounts, 4, uint32(len(counts)), writeArray(out, order, counts)},
	}, extra...)
}

// newTIFF starts a TIFF in l's byte order: the header, its IFD offset written by finishTIFF.
func newTIFF(l layout) (binary.ByteOrder, *bytes.Buffer) {
	if l.bigEndian {
		return binary.BigEndian, bytes.NewBuffer([]byte("MM\x00\x2A\x00\x00\x00\x00"))
	}
	return binary.LittleEndian, bytes.NewBuffer([]byte("II\x2A\x00\x00\x00\x00\x00"))
}

// encodeBlock returns the samples of a strip or tile (rows of rowLen bytes) with the
// predictor's differences taken and compressed as l says.
func encodeBlock(l layout, samples []byte, rowLen int) []byte {
	raw := bytes.Clone(samples)
	if l.predictor == 2 {
		for r := 0; r < len(raw); r += rowLen {
			for i := rowLen - 1; i >= l.samples; i-- {
				raw[r+i] -= raw[r+i-l.samples]
			}
		}
	}
	switch l.compression {
	case 5:
		return lzwLiterals(raw)
	case 8:
		var b bytes.Buffer
		z := zlib.NewWriter(&b)
		z.Write(raw)
		z.Close()
		return b.Bytes()
	}
	return raw
}

// writeArray writes the values of an IFD entry after the data, returning the entry's value
// (the one value itself when there is one).
func writeArray(out *bytes.Buffer, order binary.ByteOrder, v []uint32) uint32 {
	if len(v) == 1 {
		return v[0]
	}
	off := uint32(out.Len())
	for _, x := range v {
		binary.Write(out, order, x)
	}
	return off
}

// finishTIFF writes the IFD of an image of l's layout, with the strip or tile entries
// blocks (tag, type, count, value) and extra entries, all sorted by tag.
func finishTIFF(out *bytes.Buffer, order binary.ByteOrder, w, h int, l layout, blocks [][4]uint32, extra ...[3]uint32) []byte {
	bpsVal := uint32(8)
	if l.samples > 2 {
		bps := make([]byte, 2*l.samples)
		for i := range l.samples {
			order.PutUint16(bps[2*i:], 8)
		}
		bpsVal = uint32(out.Len())
		out.Write(bps)
	}
	entries := [][4]uint32{ // tag, type, count, value
		{tImageWidth, 4, 1, uint32(w)},
		{tImageLength, 4, 1, uint32(h)},
		{tBitsPerSample, 3, uint32(l.samples), bpsVal},
		{tCompression, 3, 1, uint32(l.compression)},
		{tPhotometricInterpretation, 3, 1, uint32(l.photometric)},
		{277, 3, 1, uint32(l.samples)},
	}
	entries = append(entries, blocks...)
	if l.predictor != 0 {
		entries = append(entries, [4]uint32{tPredictor, 3, 1, uint32(l.predictor)})
	}
	if l.extra != 0 {
		entries = append(entries, [4]uint32{tExtraSamples, 3, 1, uint32(l.extra)})
	}
	for _, e := range extra {
		entries = append(entries, [4]uint32{e[0], 3, 1, e[2]})
	}
	for i := range entries { // insertion sort by tag
		for j := i; j > 0 && entries[j][0] < entries[j-1][0]; j-- {
			entries[j], entries[j-1] = entries[j-1], entries[j]
		}
	}
	ifd := uint32(out.Len())
	binary.Write(out, order, uint16(len(entries)))
	for _, e := range entries {
		binary.Write(out, order, uint16(e[0]))
		binary.Write(out, order, uint16(e[1]))
		binary.Write(out, order, e[2])
		if e[1] == 3 && e[2] == 1 {
			binary.Write(out, order, uint16(e[3]))
			binary.Write(out, order, uint16(0))
		} else {
			binary.Write(out, order, e[3])
		}
	}
	binary.Write(out, order, uint32(0))
	b := out.Bytes()
	order.PutUint32(b[4:8], ifd)
	return b
}

// lzwLiterals encodes data as TIFF LZW (MSB first, early change) with literal codes only: a
// Clear code, then a Clear every 250 codes so the code width stays 9 bits, then End.
func lzwLiterals(data []byte) []byte {
	var out []byte
	var acc uint64
	var n uint
	put := func(code uint64) {
		acc = acc<<9 | code
		n += 9
		for n >= 8 {
			out = append(out, byte(acc>>(n-8)))
			n -= 8
		}
	}
	put(256)
	for i, c := range data {
		if i > 0 && i%250 == 0 {
			put(256)
		}
		put(uint64(c))
	}
	put(257)
	if n > 0 {
		out = append(out, byte(acc<<(8-n)))
	}
	return out
}

// decodeStrips decodes d in strips of k rows into one image of x/image/tiff's type.
func decodeStrips(d *Decoder, k int) (image.Image, error) {
	b := d.Bounds()
	whole := d.StripImage(make([]byte, d.BytesPerPixel()*b.Dx()*b.Dy()), b)
	buf := make([]byte, d.BytesPerPixel()*b.Dx()*k)
	for y := 0; y < b.Dy(); y += k {
		r := image.Rect(0, y, b.Dx(), min(y+k, b.Dy()))
		m := d.StripImage(buf, r)
		if err := d.ReadRows(m); err != nil {
			return nil, err
		}
		copyRows(whole, m)
	}
	return whole, d.Finish()
}

func copyRows(dst, src image.Image) {
	var dp, sp []byte
	var stride int
	switch s := src.(type) {
	case *image.Gray:
		sp, stride, dp = s.Pix, s.Stride, dst.(*image.Gray).Pix
	case *image.RGBA:
		sp, stride, dp = s.Pix, s.Stride, dst.(*image.RGBA).Pix
	case *image.NRGBA:
		sp, stride, dp = s.Pix, s.Stride, dst.(*image.NRGBA).Pix
	}
	copy(dp[src.Bounds().Min.Y*stride:], sp[:stride*src.Bounds().Dy()])
}

func allLayouts() []layout {
	var ls []layout
	for _, c := range []struct{ samples, photometric, extra int }{{1, 1, 0}, {1, 0, 0}, {3, 2, 0}, {4, 2, 1}, {4, 2, 2}} {
		for _, comp := range []int{1, 5, 8} {
			for _, pr := range []int{0, 2} {
				for _, rps := range []int{1, 7, 0} {
					ls = append(ls, layout{c.samples, c.photometric, c.extra, comp, pr, rps, rps == 7})
				}
			}
		}
	}
	return ls
}

// Every layout the package decodes gives x/image/tiff's image exactly (type, bounds and
// pixels), whatever the strip height the caller reads in.
func TestDecode_SameAsXImage(t *testing.T) {
	for _, l := range allLayouts() {
		for _, sz := range []image.Point{{1, 1}, {37, 23}} {
			data := buildTIFF(t, sz.X, sz.Y, l, pixels(sz.X, sz.Y, l.samples))
			want, err := tiff.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%v %v: x/image/tiff: %v", l, sz, err)
			}
			for _, k := range []int{1, 5, 64} {
				d, ok, err := NewDecoder(bytes.NewReader(data), int64(len(data)))
				if !ok || err != nil {
					t.Fatalf("%v %v: ok %v, err %v", l, sz, ok, err)
				}
				got, err := decodeStrips(d, k)
				if err != nil {
					t.Fatalf("%v %v k=%d: %v", l, sz, k, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%v %v k=%d: %T differs from x/image/tiff's %T", l, sz, k, got, want)
				}
			}
		}
	}
}

// Files outside the subset are left to x/image/tiff: ok false, no error.
func TestNewDecoder_LeavesOthersToXImage(t *testing.T) {
	rgb := layout{3, 2, 0, 1, 0, 0, false}
	var enc16 bytes.Buffer
	if err := tiff.Encode(&enc16, image.NewGray16(image.Rect(0, 0, 8, 8)), nil); err != nil {
		t.Fatal(err)
	}
	var pal bytes.Buffer
	if err := tiff.Encode(&pal, image.NewPaletted(image.Rect(0, 0, 8, 8), color.Palette{color.Black, color.White}), nil); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"16-bit":      enc16.Bytes(),
		"paletted":    pal.Bytes(),
		"planar":      buildTIFF(t, 8, 8, rgb, pixels(8, 8, 3), [3]uint32{tPlanarConfiguration, 3, 2}),
		"tiled":       buildTIFF(t, 8, 8, rgb, pixels(8, 8, 3), [3]uint32{tTileWidth, 3, 16}),
		"packbits":    buildTIFF(t, 8, 8, layout{3, 2, 0, 32773, 0, 0, false}, pixels(8, 8, 3)),
		"predictor-3": buildTIFF(t, 8, 8, layout{3, 2, 0, 1, 3, 0, false}, pixels(8, 8, 3)),
		"cmyk":        buildTIFF(t, 8, 8, layout{4, 5, 0, 1, 0, 0, false}, pixels(8, 8, 4)),
		"not-tiff":    []byte("GIF89a..."),
		"empty":       nil,
	}
	for name, data := range cases {
		d, ok, err := NewDecoder(bytes.NewReader(data), int64(len(data)))
		if ok || err != nil || d != nil {
			t.Errorf("%s: ok %v, err %v; want it left to x/image/tiff", name, ok, err)
		}
	}
}

// Truncated and lying strips fail where x/image/tiff fails, and never succeed with other
// pixels: every prefix of a file, and strip byte counts past the end of the file.
func TestDecode_TruncatedAndLying(t *testing.T) {
	for _, l := range []layout{{3, 2, 0, 1, 2, 7, false}, {4, 2, 2, 5, 0, 7, false}, {1, 1, 0, 8, 2, 0, true}} {
		full := buildTIFF(t, 20, 30, l, pixels(20, 30, l.samples))
		for n := 0; n < len(full); n += 3 {
			checkSame(t, full[:n])
		}
		// Corrupt bytes at every 17th position.
		for i := 0; i < len(full); i += 17 {
			c := append([]byte(nil), full...)
			c[i] ^= 0x5a
			checkSame(t, c)
		}
	}
}

// checkSame decodes data both ways: the same pixels, or both fail; never a panic.
func checkSame(t *testing.T, data []byte) {
	t.Helper()
	cfg, err := tiff.DecodeConfig(bytes.NewReader(data))
	if err != nil || cfg.Width*cfg.Height > 1<<20 {
		return
	}
	d, ok, err := NewDecoder(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("NewDecoder error %v (it reports none)", err)
	}
	if !ok {
		return
	}
	want, wantErr := tiff.Decode(bytes.NewReader(data))
	got, err := decodeStrips(d, 3)
	switch {
	case wantErr == nil && err != nil:
		t.Fatalf("x/image/tiff decodes %d bytes, tiffstrip: %v", len(data), err)
	case wantErr != nil && err == nil:
		t.Fatalf("tiffstrip decodes %d bytes, x/image/tiff: %v", len(data), wantErr)
	case err == nil && !reflect.DeepEqual(got, want):
		t.Fatalf("%d bytes: pixels differ from x/image/tiff's", len(data))
	}
}

// FuzzStripDecode decodes any input with tiffstrip (when it takes it) and x/image/tiff:
// the same image or both fail; and with Prefetch as without (samePrefetched). Seeds: testdata/fuzz/FuzzStripDecode (TIFFSTRIP_WRITE_SEEDS=1
// go test -run TestWriteSeeds rewrites them) and every layout at a small size.
func FuzzStripDecode(f *testing.F) {
	for _, l := range allLayouts() {
		f.Add(buildTIFF(f, 5, 4, l, pixels(5, 4, l.samples)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSame(t, data)
		samePrefetched(t, data)
	})
}

// TestWriteSeeds writes the fuzz seeds of a few layouts to testdata/fuzz/FuzzStripDecode.
func TestWriteSeeds(t *testing.T) {
	if os.Getenv("TIFFSTRIP_WRITE_SEEDS") == "" {
		t.Skip("set TIFFSTRIP_WRITE_SEEDS=1 to rewrite the seeds")
	}
	for i, l := range allLayouts() {
		if i%3 == 0 {
			writeSeed(t, "FuzzStripDecode", "seed-"+l.String(), buildTIFF(t, 6, 5, l, pixels(6, 5, l.samples)))
		}
	}
}

// writeSeed writes data as the []byte seed name of the fuzz target in testdata/fuzz.
func writeSeed(t *testing.T, target, name string, data []byte) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
