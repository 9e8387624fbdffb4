package tiffenc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/convert/internal/testimg"
)

// modelOf is the row model of a whole image m, and whether Encode sees it as opaque.
func modelOf(m image.Image) (color.Model, bool) {
	switch m := m.(type) {
	case *image.Gray:
		return color.GrayModel, true
	case *image.RGBA:
		return color.RGBAModel, m.Opaque()
	case *image.NRGBA:
		return color.NRGBAModel, m.Opaque()
	}
	return nil, false
}

// rowsOf returns rows [y0, y1) of m as an image sharing m's pixels, with bounds from y0.
func rowsOf(m image.Image, y0, y1 int) image.Image {
	r := image.Rect(0, y0, m.Bounds().Dx(), y1)
	switch m := m.(type) {
	case *image.Gray:
		return &image.Gray{Pix: m.Pix[y0*m.Stride:], Stride: m.Stride, Rect: r}
	case *image.RGBA:
		return &image.RGBA{Pix: m.Pix[y0*m.Stride:], Stride: m.Stride, Rect: r}
	case *image.NRGBA:
		return &image.NRGBA{Pix: m.Pix[y0*m.Stride:], Stride: m.Stride, Rect: r}
	}
	panic(fmt.Sprintf("rowsOf %T", m))
}

// streamEncode encodes m through a StripEncoder, feeding `feed` rows at a time (into a copy
// reused between calls, so the encoder must copy), and redoes it with ChosenOptions(true) on
// ErrFlat, as a caller must. flatRedo says whether it did.
func streamEncode(ctx context.Context, w io.Writer, m image.Image, o *Options, feed int) (flatRedo bool, err error) {
	flatRedo, _, err = streamEncodeRows(ctx, w, m, o, feed)
	return flatRedo, err
}

// streamEncodeRows is streamEncode, also saying how many rows the first pass had written
// when the encoder said ErrFlat (the image's height when it said it at Close).
func streamEncodeRows(ctx context.Context, w io.Writer, m image.Image, o *Options, feed int) (flatRedo bool, flatAt int, err error) {
	return streamEncodeWith(ctx, w, m, o, feed, nil)
}

// streamEncodeWith is streamEncodeRows calling setup, when not nil, on every encoder it makes.
func streamEncodeWith(ctx context.Context, w io.Writer, m image.Image, o *Options, feed int, setup func(*StripEncoder)) (flatRedo bool, flatAt int, err error) {
	model, opaque := modelOf(m)
	b := m.Bounds()
	for {
		e, err := NewStripEncoder(ctx, w, b.Dx(), b.Dy(), model, opaque, o)
		if err != nil {
			return flatRedo, flatAt, err
		}
		if setup != nil {
			setup(e)
		}
		var scratch image.Image
		var werr error
		y := 0
		for ; y < b.Dy() && werr == nil; y += feed {
			src := rowsOf(m, y, min(y+feed, b.Dy()))
			// A reused buffer: what the pipeline's decoder does.
			switch s := src.(type) {
			case *image.Gray:
				c, _ := scratch.(*image.Gray)
				if c == nil {
					c = image.NewGray(image.Rect(0, 0, b.Dx(), feed))
				}
				scratch = c
				src = &image.Gray{Pix: c.Pix, Stride: c.Stride, Rect: s.Rect}
			case *image.RGBA:
				c, _ := scratch.(*image.RGBA)
				if c == nil {
					c = image.NewRGBA(image.Rect(0, 0, b.Dx(), feed))
				}
				scratch = c
				src = &image.RGBA{Pix: c.Pix, Stride: c.Stride, Rect: s.Rect}
			case *image.NRGBA:
				c, _ := scratch.(*image.NRGBA)
				if c == nil {
					c = image.NewNRGBA(image.Rect(0, 0, b.Dx(), feed))
				}
				scratch = c
				src = &image.NRGBA{Pix: c.Pix, Stride: c.Stride, Rect: s.Rect}
			}
			draw.Draw(src.(draw.Image), src.Bounds(), rowsOf(m, y, min(y+feed, b.Dy())), image.Pt(0, y), draw.Src)
			werr = e.WriteRows(src)
		}
		if werr != nil {
			e.Abort()
			err = werr
		} else {
			err = e.Close()
		}
		if errors.Is(err, ErrFlat) && !flatRedo {
			flatRedo, flatAt = true, min(y, b.Dy())
			f := ChosenOptions(true)
			if o != nil {
				f.Workers = o.Workers
			}
			o = &f
			continue
		}
		return flatRedo, flatAt, err
	}
}

// graphics is TestFlat's kind of image: random rectangles of flat colour.
func graphics(kind string, w, h int, opaque bool) image.Image {
	rng := rand.New(rand.NewPCG(7, 8))
	m := testimg.Random(rng, kind, w, h, opaque, false).(draw.Image)
	for range 20 {
		x, y := rng.IntN(w), rng.IntN(h)
		c := m.At(rng.IntN(w), rng.IntN(h))
		draw.Draw(m, image.Rect(x, y, x+w/2, y+h/3), &image.Uniform{c}, image.Point{}, draw.Src)
	}
	draw.Draw(m, image.Rect(0, 0, w, 2*h/3), &image.Uniform{m.At(3, h-5)}, image.Point{}, draw.Src)
	return m
}

// checkNoLeak fails the test if goroutines it started are still running a while after it.
func checkNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				t.Errorf("%d goroutines, %d before the test", runtime.NumGoroutine(), before)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// StripEncoder writes Encode's bytes for every layout (gray, opaque RGBA and NRGBA as RGB,
// translucent RGBA and NRGBA with their ExtraSamples), photos and graphics (redone with the
// flat options after ErrFlat), chosen and explicit options, one-row and short-last-strip
// images, whatever number of rows each WriteRows brings.
func TestStripEncoder_SameBytesAsEncode(t *testing.T) {
	checkNoLeak(t)
	gray := image.NewGray(image.Rect(0, 0, 257, 300))
	photo := testimg.Photo(257, 300)
	for i := range gray.Pix {
		gray.Pix[i] = photo.Pix[4*i+1]
	}
	rgba := image.NewRGBA(photo.Rect)
	draw.Draw(rgba, rgba.Rect, testimg.PhotoAlpha(257, 300), image.Point{}, draw.Src)
	opaqueRGBA := image.NewRGBA(photo.Rect)
	draw.Draw(opaqueRGBA, rgba.Rect, photo, image.Point{}, draw.Src)
	images := map[string]image.Image{
		"gray":               gray,
		"nrgba-opaque":       photo,
		"rgba-opaque":        opaqueRGBA,
		"nrgba-translucent":  testimg.PhotoAlpha(257, 300),
		"rgba-translucent":   rgba,
		"one-row":            testimg.Photo(300, 1),
		"short":              testimg.Photo(40, 31),
		"graphics-gray":      graphics("gray", 150, 301, true),
		"graphics-nrgba":     graphics("nrgba", 150, 301, true),
		"graphics-rgba":      graphics("rgba", 150, 301, false),
		"graphics-tall-thin": graphics("nrgba", 7, 1000, true),
	}
	for _, name := range []string{"graphics-gray", "graphics-nrgba", "graphics-rgba", "graphics-tall-thin"} {
		if l, _ := newLayout(images[name]); !flat(l) {
			t.Fatalf("%s is not flat: the ErrFlat path would go untested", name)
		}
	}
	for name, m := range images {
		for _, o := range []*Options{nil, {Level: 1, RowsPerStrip: 16}, {Level: 6, RowsPerStrip: 100, NoPredictor: true, Workers: 1}, {Level: 9}, {Level: HuffmanOnly, RowsPerStrip: 7, Workers: 3}} {
			want := encode(t, m, o)
			for _, feed := range []int{1, 7, 64, 100, m.Bounds().Dy()} {
				var got bytes.Buffer
				redo, err := streamEncode(context.Background(), &got, m, o, feed)
				if err != nil {
					t.Fatalf("%s %+v feed %d: %v", name, o, feed, err)
				}
				if !bytes.Equal(got.Bytes(), want) {
					t.Fatalf("%s %+v feed %d: %d bytes differ from Encode's %d", name, o, feed, got.Len(), len(want))
				}
				l, _ := newLayout(m)
				if wantRedo := o == nil && flat(l); redo != wantRedo {
					t.Errorf("%s %+v: flat redo %v, want %v", name, o, redo, wantRedo)
				}
			}
		}
	}
}

// Graphics are told from photos as soon as the sample Encode takes says so whatever the rows
// still to come: for an image whose top two thirds are one colour, at about half its height,
// not at Close.
func TestStripEncoder_FlatEarly(t *testing.T) {
	checkNoLeak(t)
	m := image.NewNRGBA(image.Rect(0, 0, 200, 1000))
	draw.Draw(m, m.Rect, testimg.Photo(200, 1000), image.Point{}, draw.Src)
	draw.Draw(m, image.Rect(0, 0, 200, 667), &image.Uniform{color.NRGBA{10, 200, 30, 255}}, image.Point{}, draw.Src)
	want := encode(t, m, nil)
	var got bytes.Buffer
	redo, at, err := streamEncodeRows(context.Background(), &got, m, nil, 10)
	if err != nil || !redo {
		t.Fatalf("redo %v, err %v", redo, err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatal("output differs from Encode's")
	}
	if at < 400 || at > 600 {
		t.Errorf("ErrFlat after %d of 1000 rows, want about 500", at)
	}
}

// Misuse and failures: rows of another model or out of order, too few rows, a translucent
// strip in an image said to be opaque, a cancelled context (prompt, the context's error,
// no goroutine left) and an output that fails at any point.
func TestStripEncoder_Errors(t *testing.T) {
	checkNoLeak(t)
	ctx := context.Background()
	m := testimg.Photo(50, 300)
	if _, err := NewStripEncoder(ctx, io.Discard, 5, 5, color.RGBA64Model, true, nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("RGBA64 rows: err = %v", err)
	}
	if _, err := NewStripEncoder(ctx, io.Discard, 5, 0, color.GrayModel, true, nil); err == nil {
		t.Error("no rows: no error")
	}
	if _, err := NewStripEncoder(ctx, io.Discard, 5, 5, color.GrayModel, true, &Options{Level: 10}); err == nil {
		t.Error("level 10: no error")
	}

	e, err := NewStripEncoder(ctx, io.Discard, 50, 300, color.NRGBAModel, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.WriteRows(image.NewRGBA(image.Rect(0, 0, 50, 10))); err == nil {
		t.Error("RGBA rows into an NRGBA encoder: no error")
	}
	if err := e.WriteRows(rowsOf(m, 10, 20)); err == nil {
		t.Error("rows from 10 first: no error")
	}
	if err := e.WriteRows(rowsOf(m, 0, 20)); err != nil {
		t.Fatal(err)
	}
	if err := e.WriteRows(rowsOf(testimg.PhotoAlpha(50, 300), 20, 30)); err == nil {
		t.Error("translucent rows in an opaque image: no error")
	}
	if err := e.Close(); err == nil {
		t.Error("Close after 20 of 300 rows: no error")
	}
	if err := e.WriteRows(rowsOf(m, 20, 30)); err == nil {
		t.Error("WriteRows after Close: no error")
	}

	// Cancelled while the rows come: WriteRows or Close returns the context's error.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e, err = NewStripEncoder(cctx, io.Discard, 50, 300, color.NRGBAModel, true, &Options{Level: 1, RowsPerStrip: 4})
	if err != nil {
		t.Fatal(err)
	}
	var werr error
	for y := 0; y < 300 && werr == nil; y += 4 {
		if y == 100 {
			cancel()
		}
		werr = e.WriteRows(rowsOf(m, y, y+4))
	}
	if werr == nil {
		werr = e.Close()
	}
	e.Abort()
	if !errors.Is(werr, context.Canceled) {
		t.Errorf("cancelled: err = %v", werr)
	}

	for _, n := range []int{0, 8, 1000, 30000} {
		_, err := streamEncode(ctx, &failWriter{n: n}, m, &Options{Level: 1, RowsPerStrip: 16}, 10)
		if err == nil || err.Error() != "disk full" {
			t.Errorf("writer failing after %d bytes: err = %v", n, err)
		}
	}
}

// fileSpills hands StripEncoder.Spill real files in dir and remembers them, closed and
// removed by the test's cleanup.
type fileSpills struct {
	t     *testing.T
	dir   string
	files []*os.File
}

func newFileSpills(t *testing.T) *fileSpills {
	s := &fileSpills{t: t, dir: t.TempDir()}
	t.Cleanup(func() {
		for _, f := range s.files {
			f.Close()
			os.Remove(f.Name())
		}
	})
	return s
}

func (s *fileSpills) create() (io.ReadWriteSeeker, error) {
	f, err := os.CreateTemp(s.dir, "spill-*")
	if err != nil {
		return nil, err
	}
	s.files = append(s.files, f)
	return f, nil
}

// With Spill, the strips go through the spill file and the output is still Encode's bytes,
// for every layout, photos and graphics (whose first pass spilled before ErrFlat), whatever
// the threshold: 0 (every strip spilled, from the first), a few strips' worth (the held ones
// moved over when it is passed), and more than the whole output (no spill file created).
// The spill holds exactly the strips: the output less its header and IFD.
func TestStripEncoder_SpillSameBytes(t *testing.T) {
	checkNoLeak(t)
	images := map[string]image.Image{
		"photo":            testimg.Photo(257, 300),
		"rgba-translucent": testimg.PhotoAlpha(257, 300),
		"graphics-gray":    graphics("gray", 150, 301, true),
		"one-row":          testimg.Photo(300, 1),
	}
	for name, m := range images {
		for _, o := range []*Options{nil, {Level: 1, RowsPerStrip: 4, Workers: 3}, {Level: 6, RowsPerStrip: 100, NoPredictor: true, Workers: 1}} {
			want := encode(t, m, o)
			for _, after := range []int64{0, 3000, int64(len(want))} {
				spills := newFileSpills(t)
				var got bytes.Buffer
				lastFrom := 0 // the files made by the last pass (the graphics one after ErrFlat)
				_, _, err := streamEncodeWith(context.Background(), &got, m, o, 7, func(e *StripEncoder) {
					lastFrom = len(spills.files)
					e.Spill(after, spills.create)
				})
				if err != nil {
					t.Fatalf("%s %+v after %d: %v", name, o, after, err)
				}
				if !bytes.Equal(got.Bytes(), want) {
					t.Fatalf("%s %+v after %d: %d bytes differ from Encode's %d", name, o, after, got.Len(), len(want))
				}
				ifdOff := int64(binary.LittleEndian.Uint32(want[4:8]))
				strips := ifdOff - 8 // or one less: the IFD's word alignment
				last := spills.files[lastFrom:]
				if strips-1 <= after {
					if len(last) != 0 {
						t.Errorf("%s %+v after %d: %d spill files for %d bytes of strips", name, o, after, len(last), strips)
					}
					continue
				}
				if len(last) != 1 {
					t.Fatalf("%s %+v after %d: %d spill files for %d bytes of strips, want 1", name, o, after, len(last), strips)
				}
				fi, err := last[0].Stat()
				if err != nil {
					t.Fatal(err)
				}
				if fi.Size() != strips && fi.Size() != strips-1 {
					t.Errorf("%s %+v after %d: spill of %d bytes, want the %d bytes of strips", name, o, after, fi.Size(), strips)
				}
			}
		}
	}
}

// errSpill is a spill that fails: to create, to write, or to read back.
type errSpill struct {
	io.ReadWriteSeeker
	failWrite, failRead bool
}

func (s *errSpill) Write(p []byte) (int, error) {
	if s.failWrite {
		return 0, errors.New("spill disk full")
	}
	return s.ReadWriteSeeker.Write(p)
}

func (s *errSpill) Read(p []byte) (int, error) {
	if s.failRead {
		return 0, errors.New("spill unreadable")
	}
	return s.ReadWriteSeeker.Read(p)
}

// A spill that cannot be created, written or read back fails the encoding with its error,
// wrapped, and no goroutine left.
func TestStripEncoder_SpillErrors(t *testing.T) {
	checkNoLeak(t)
	m := testimg.Photo(200, 300)
	o := &Options{Level: 1, RowsPerStrip: 8, Workers: 2}
	errCreate := errors.New("scratch directory read-only")
	for name, c := range map[string]struct {
		create func(*fileSpills) (io.ReadWriteSeeker, error)
		want   string
	}{
		"create": {func(*fileSpills) (io.ReadWriteSeeker, error) { return nil, errCreate }, "scratch directory read-only"},
		"write": {func(s *fileSpills) (io.ReadWriteSeeker, error) {
			f, err := s.create()
			return &errSpill{ReadWriteSeeker: f, failWrite: true}, err
		}, "spill disk full"},
		"read": {func(s *fileSpills) (io.ReadWriteSeeker, error) {
			f, err := s.create()
			return &errSpill{ReadWriteSeeker: f, failRead: true}, err
		}, "spill unreadable"},
	} {
		spills := newFileSpills(t)
		_, _, err := streamEncodeWith(context.Background(), io.Discard, m, o, 10, func(e *StripEncoder) {
			e.Spill(0, func() (io.ReadWriteSeeker, error) { return c.create(spills) })
		})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
		if name == "create" && !errors.Is(err, errCreate) {
			t.Errorf("create: err = %v does not wrap the creation's error", err)
		}
	}
}

// BenchmarkStripEncoder is the streamed encoder on a 12 MP photo fed 64 rows at a time;
// BenchmarkEncode's photo row is the whole-image figure to compare with.
func BenchmarkStripEncoder(b *testing.B) {
	m := testimg.Photo(4000, 3000)
	b.SetBytes(int64(len(m.Pix)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := streamEncode(context.Background(), io.Discard, m, nil, 64); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzStripEncoder checks that every small image of every supported type, with the options
// and the rows per WriteRows the data picks (Level 0 included: short repeated pixel data
// makes graphics, long data photos), is written by StripEncoder with Encode's exact bytes.
func FuzzStripEncoder(f *testing.F) {
	f.Add([]byte{0, 3, 3, 0, 0, 1, 1, 2, 3})
	f.Add([]byte{1, 39, 69, 0, 0x80, 7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add([]byte{2, 20, 50, 0x45, 3, 0, 200})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 6 {
			return
		}
		kind, w, h, opt, alpha, feed := data[0]%3, int(data[1]%40)+1, int(data[2]%70)+1, data[3], data[4], int(data[5]%80)+1
		px := data[6:]
		if len(px) == 0 {
			px = []byte{0}
		}
		o := &Options{RowsPerStrip: int(opt % 9), NoPredictor: opt&0x10 != 0, Stdlib: opt&0x20 != 0, Workers: int(opt>>7) * 3}
		if opt&0x40 != 0 {
			o.Level = 1 + int(alpha%9)
		}
		m := testimg.FromBytes(kind, w, h, px, alpha&0x80 != 0)
		want := encode(t, m, o)
		var got bytes.Buffer
		if _, err := streamEncode(context.Background(), &got, m, o, feed); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("%+v feed %d: %d bytes differ from Encode's %d", o, feed, got.Len(), len(want))
		}
	})
}
