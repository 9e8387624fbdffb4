package image

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/draw"
	"io"
	"runtime"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/wasmcodec"
)

// AVIFQuality is the quality AVIF outputs are written with when the job sets none: libavif's
// own default, about as faithful as JPEG at 85 (PSNR 33.7 against 34.2 dB on a 12 MP photo)
// in half the bytes.
const AVIFQuality = 60

// avifSpeed is libaom's speed (0 slow .. 10 fast). BenchmarkAVIFSpeed, 1000x1000 at quality
// 60: speeds 8 and 10 both took 0.7-1.0 s, speed 6 5.4-6.0 s for files no smaller.
const avifSpeed = 10

// avifMaxSide is the largest width or height written as AVIF: libavif's decoders refuse more
// than 16384x16384 by default.
const avifMaxSide = 16384

// avifMaxPixels bounds AVIF outputs: libaom runs in 32-bit wasm memory (4 GiB at most).
// 8000x6000 encoded (in 116 s on a busy machine, peak RSS 4.9 GB, when wazero's memory still
// grew by copying; 12 MP now peaks at 348 MiB, 29 bytes a pixel), larger is untried.
const avifMaxPixels = 48_000_000

// avifDecodeConfig reads the primary image's size from the file's boxes, never running the
// wasm decoder: the first call of that costs seconds of compilation, and a hostile header
// should cost nothing. The size is the displayed one, after any quarter-turn rotation.
func avifDecodeConfig(r io.Reader) (image.Config, error) {
	ra, ok := r.(sizedReaderAt)
	if !ok {
		return image.Config{}, errors.New("avif: needs random access")
	}
	top, err := readISOBoxes(ra, 0, ra.Size())
	if err != nil {
		return image.Config{}, err
	}
	if len(top) == 0 || top[0].typ != "ftyp" {
		return image.Config{}, errors.New("avif: no ftyp box first")
	}
	info, err := readHEIFInfo(ra, top)
	if err != nil {
		return image.Config{}, err
	}
	w, h := info.width, info.height
	if info.rotation%2 == 1 {
		w, h = h, w
	}
	return image.Config{ColorModel: color.RGBAModel, Width: w, Height: h}, nil
}

// decodeAVIF decodes the primary image (the first frame of a sequence) with libavif and dav1d
// compiled to wasm (convert/internal/wasmcodec), applying its rotation and mirroring.
func decodeAVIF(ctx context.Context, r io.Reader, _ image.Config) (image.Image, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	img, err := wasmcodec.DecodeAVIF(ctx, data)
	if err != nil {
		return nil, err
	}
	orientation := 1
	if top, err := readISOBoxes(bytes.NewReader(data), 0, int64(len(data))); err == nil {
		if info, err := readHEIFInfo(bytes.NewReader(data), top); err == nil {
			orientation = info.exifOrientation()
		}
	}
	return orient(img, orientation), nil
}

// encodeAVIF writes AVIF with libavif and libaom compiled to wasm (convert/internal/wasmcodec;
// a job's cancellation stops it), 4:2:0 at the job's
// quality; alpha is kept.
func encodeAVIF(ctx context.Context, w io.Writer, img image.Image, opts convert.Options) error {
	quality := AVIFQuality
	if opts.Quality != 0 {
		quality = opts.Quality
	}
	m := packedRGBA(img)
	if err := ctx.Err(); err != nil {
		return err
	}
	ao := wasmcodec.AVIFOptions{
		Quality:      quality,
		QualityAlpha: quality,
		Speed:        avifSpeed,
		Chroma:       wasmcodec.AVIFYUV420,
	}
	if c := catalogFrom(ctx); c != nil {
		// Bands in parallel instances, each past the first reserving its share of the
		// conversion memory budget before it starts (the job's own reservation covers one).
		ao.Tiles = avifTiles
		ao.Reserve = func(ctx context.Context, bandPixels int64) (func(), error) {
			n := int64(float64(bandPixels)*avifEncodeCost) + avifInstanceMemory
			if err := c.AcquireMemory(ctx, n, "another AVIF encoder instance"); err != nil {
				return nil, err
			}
			return func() { c.ReleaseMemory(n) }, nil
		}
	}
	return GuardCodec("AVIF encoder", func() error {
		return wasmcodec.EncodeAVIF(ctx, &convert.ContextWriter{Ctx: ctx, W: w}, m, ao)
	})
}

// avifTiles is how many horizontal bands a large opaque AVIF is encoded in at most, each in
// a WebAssembly instance of its own on a core of its own, stored as an AVIF grid: libaom runs
// single-threaded in WebAssembly (wasmcodec.AVIFTiles says which images are split).
var avifTiles = min(runtime.GOMAXPROCS(0), 4)

// avifEncodeCost is the AVIF codec's EncodeCost: the bytes a pixel costs an encoder instance.
const avifEncodeCost = 20

// avifInstanceMemory is what a band's encoder instance holds beside its pixels' share.
const avifInstanceMemory = 32 << 20

type catalogKey struct{}

// withCatalog gives the codecs called under ctx the catalog whose memory budget they reserve
// extra memory from.
func withCatalog(ctx context.Context, c *convert.Catalog) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, catalogKey{}, c)
}

// catalogFrom is the catalog withCatalog put in ctx, or nil.
func catalogFrom(ctx context.Context) *convert.Catalog {
	c, _ := ctx.Value(catalogKey{}).(*convert.Catalog)
	return c
}

// packedRGBA returns an 8-bit premultiplied image whose rows are packed from (0, 0): the
// layout the AVIF encoder copies into its memory.
func packedRGBA(img image.Image) *image.RGBA {
	m8 := To8Bit(img)
	if m, ok := m8.(*image.RGBA); ok && m.Rect.Min == (image.Point{}) && m.Stride == 4*m.Rect.Dx() {
		return m
	}
	if m, ok := m8.(*image.NRGBA); ok && m.Opaque() && m.Rect.Min == (image.Point{}) && m.Stride == 4*m.Rect.Dx() {
		return &image.RGBA{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect}
	}
	b := m8.Bounds()
	dst := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(dst, dst.Bounds(), m8, b.Min, draw.Src)
	return dst
}

// exifOrientation is the EXIF orientation (1..8) equivalent to the image's irot and imir, as
// libavif maps them.
func (info heifImageInfo) exifOrientation() int {
	// Rows: quarter turns anticlockwise; columns: no mirror, imir axis 0, imir axis 1.
	table := [4][3]int{{1, 4, 2}, {8, 5, 7}, {3, 2, 4}, {6, 7, 5}}
	return table[info.rotation&3][info.mirror]
}

// orient returns img transformed for display per an EXIF orientation (2..8; others leave it
// as is), for the *image.RGBA and *image.RGBA64 the AVIF decoder returns.
func orient(img image.Image, orientation int) image.Image {
	if orientation < 2 || orientation > 8 {
		return img
	}
	var pix []byte
	var stride, bpp int
	switch m := img.(type) {
	case *image.RGBA:
		pix, stride, bpp = m.Pix, m.Stride, 4
	case *image.RGBA64:
		pix, stride, bpp = m.Pix, m.Stride, 8
	default:
		return img
	}
	b := img.Bounds()
	sw, sh := b.Dx(), b.Dy()
	dw, dh := sw, sh
	if orientation >= 5 { // the quarter turns swap the sides
		dw, dh = sh, sw
	}
	dst := make([]byte, dw*dh*bpp)
	for sy := 0; sy < sh; sy++ {
		row := pix[sy*stride : sy*stride+sw*bpp]
		for sx := 0; sx < sw; sx++ {
			dx, dy := sx, sy
			switch orientation {
			case 2: // mirrored left to right
				dx = sw - 1 - sx
			case 3: // half turn
				dx, dy = sw-1-sx, sh-1-sy
			case 4: // mirrored top to bottom
				dy = sh - 1 - sy
			case 5: // transposed
				dx, dy = sy, sx
			case 6: // quarter turn clockwise
				dx, dy = sh-1-sy, sx
			case 7: // transversed
				dx, dy = sh-1-sy, sw-1-sx
			case 8: // quarter turn anticlockwise
				dx, dy = sy, sw-1-sx
			}
			copy(dst[(dy*dw+dx)*bpp:], row[sx*bpp:(sx+1)*bpp])
		}
	}
	r := image.Rect(0, 0, dw, dh)
	if bpp == 8 {
		return &image.RGBA64{Pix: dst, Stride: dw * 8, Rect: r}
	}
	return &image.RGBA{Pix: dst, Stride: dw * 4, Rect: r}
}
