package image

import (
	"context"
	"errors"
	"image"
	"image/color"
	"image/draw"
	"io"

	"github.com/gen2brain/avif"

	"github.com/convsvc/convsvc/convert"
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

// avifMaxPixels bounds AVIF outputs: libaom runs in 32-bit wasm memory (4 GiB at most) and
// needs about 100 bytes a pixel; 8000x6000 encoded (in 116 s on a busy machine, peak RSS
// 4.9 GB), larger is untried.
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
// compiled to wasm, applying its rotation and mirroring.
func decodeAVIF(_ context.Context, r io.Reader, _ image.Config) (image.Image, error) {
	return avif.Decode(r, avif.Options{AutoRotate: true})
}

// encodeAVIF writes AVIF with libavif and libaom compiled to wasm, 4:2:0 at the job's
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
	return GuardCodec("AVIF encoder", func() error {
		return avif.Encode(&convert.ContextWriter{Ctx: ctx, W: w}, m, avif.Options{
			Quality:           quality,
			QualityAlpha:      quality,
			Speed:             avifSpeed,
			ChromaSubsampling: image.YCbCrSubsampleRatio420,
		})
	})
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
