package image

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"io"

	"github.com/convsvc/convsvc/convert"
)

// MaxFrames is the most frames an animation may have to be converted as one; animations
// whose target cannot hold them convert their first frame whatever the count.
const MaxFrames = 10_000

// animFrameCost is the estimated bytes per output pixel of every frame an animation holds
// at once: the decoded canvas and the encoder's copy of it.
const animFrameCost = 8

// animation is a decoded animation: every frame is a full canvas of the same size, already
// composed (disposal and blending applied), so encoders need not know the source's rules.
type animation struct {
	frames []image.Image
	delays []int // milliseconds each frame shows
	// loopCount is how many times the animation plays, 0 meaning forever (WebP's convention;
	// GIF counts repeats after the first play instead).
	loopCount int
}

// countImageFrames returns how many frames the input holds, checking the animation's total size
// against the limits; 1 for a still image.
func countImageFrames(in *io.SectionReader, codec *Codec, cfg image.Config, lim convert.Limits) (int, error) {
	var n int
	err := GuardCodec(codec.Name+" frame counter", func() (err error) {
		n, err = codec.frames(in)
		return err
	})
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, convert.Errorf(err, "input is not a valid %s file (it is truncated)", codec.Name)
		}
		var ce *convert.Error
		if errors.As(err, &ce) {
			return 0, err
		}
		return 0, convert.Errorf(err, "input is not a valid %s file (%v)", codec.Name, err)
	}
	if n <= 1 {
		return 1, nil
	}
	return n, checkImageFrames(n, cfg.Width, cfg.Height, lim)
}

// checkImageFrames bounds an animation: at most MaxFrames frames, and frames*width*height within
// the pixel limit, since every frame is decoded to a full canvas.
func checkImageFrames(n, w, h int, lim convert.Limits) error {
	if n > MaxFrames {
		return convert.Errorf(nil, "animation has %d frames, over the limit of %d", n, MaxFrames)
	}
	px := int64(w) * int64(h)
	if px > 0 && int64(n) > lim.MaxPixels/px {
		return convert.Errorf(nil, "animation has %d frames of %dx%d = %s megapixels in all, over the %s megapixel limit",
			n, w, h, Megapixels(float64(n)*float64(px)), Megapixels(float64(lim.MaxPixels)))
	}
	return nil
}

// decodeImageFrames decodes every frame of an animation whose header and frame count were checked.
func decodeImageFrames(ctx context.Context, in *io.SectionReader, codec *Codec, cfg image.Config, frames int) (*animation, error) {
	src := newInputReader(ctx, in)
	var a *animation
	err := GuardCodec(codec.Name+" decoder", func() (err error) {
		a, err = codec.decodeAll(ctx, src, cfg)
		return err
	})
	if err != nil {
		return nil, decodeError(ctx, codec, src, err)
	}
	if len(a.frames) == 0 || len(a.frames) > frames {
		return nil, convert.Errorf(fmt.Errorf("counted %d frames, decoded %d", frames, len(a.frames)),
			"input is not a valid %s file (its frame count is inconsistent)", codec.Name)
	}
	for _, f := range a.frames {
		if b := f.Bounds(); b.Dx() != cfg.Width || b.Dy() != cfg.Height {
			return nil, convert.Errorf(fmt.Errorf("header says %dx%d, decoded a %dx%d frame", cfg.Width, cfg.Height, b.Dx(), b.Dy()),
				"input is not a valid %s file (its size is inconsistent)", codec.Name)
		}
	}
	return a, nil
}

// gifFrames counts a GIF's image descriptors by walking its blocks, skipping the LZW data
// unread: a small file can hold thousands of frames, each decoded to a full canvas later.
func gifFrames(r sizedReaderAt) (int, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(r, 0, r.Size()), 32<<10)
	var hdr [13]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return 0, err
	}
	if hdr[10]&0x80 != 0 { // global colour table
		if _, err := br.Discard(3 << (hdr[10]&7 + 1)); err != nil {
			return 0, err
		}
	}
	skipSubBlocks := func() error {
		for {
			n, err := br.ReadByte()
			if err != nil {
				return err
			}
			if n == 0 {
				return nil
			}
			if _, err := br.Discard(int(n)); err != nil {
				return err
			}
		}
	}
	frames := 0
	for {
		b, err := br.ReadByte()
		if err != nil {
			return frames, err
		}
		switch b {
		case 0x21: // extension: label, then sub-blocks
			if _, err := br.ReadByte(); err != nil {
				return frames, err
			}
			if err := skipSubBlocks(); err != nil {
				return frames, err
			}
		case 0x2c: // image descriptor, local colour table, LZW code size, sub-blocks
			var d [9]byte
			if _, err := io.ReadFull(br, d[:]); err != nil {
				return frames, err
			}
			if d[8]&0x80 != 0 {
				if _, err := br.Discard(3 << (d[8]&7 + 1)); err != nil {
					return frames, err
				}
			}
			if _, err := br.ReadByte(); err != nil {
				return frames, err
			}
			if err := skipSubBlocks(); err != nil {
				return frames, err
			}
			frames++
			if frames > MaxFrames {
				return frames, nil // enough to refuse it
			}
		case 0x3b: // trailer
			return frames, nil
		default:
			return frames, fmt.Errorf("gif: unknown block type 0x%02x", b)
		}
	}
}

// decodeGIFAll decodes every frame of a GIF and composes them as a browser shows them: each
// frame drawn over the canvas left by the previous one's disposal, transparent pixels showing
// what is beneath. Delays of 0 or 10 ms become 100 ms, as browsers play them.
func decodeGIFAll(ctx context.Context, r io.Reader, cfg image.Config) (*animation, error) {
	g, err := gif.DecodeAll(r)
	if err != nil {
		return nil, err
	}
	screen := image.Rect(0, 0, cfg.Width, cfg.Height)
	canvas := image.NewNRGBA(screen)
	a := &animation{loopCount: gifToWebPLoop(g.LoopCount)}
	var saved *image.NRGBA
	for i, fr := range g.Image {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var disposal byte
		if i < len(g.Disposal) {
			disposal = g.Disposal[i]
		}
		rect := fr.Bounds().Intersect(screen)
		if disposal == gif.DisposalPrevious {
			saved = cloneNRGBA(canvas)
		}
		drawPalettedOver(canvas, fr, rect)
		a.frames = append(a.frames, cloneNRGBA(canvas))
		delay := 0
		if i < len(g.Delay) {
			delay = g.Delay[i]
		}
		if delay <= 1 {
			delay = 10
		}
		a.delays = append(a.delays, 10*delay)
		switch disposal {
		case gif.DisposalBackground:
			// Browsers restore to transparent, not to the background colour.
			for y := rect.Min.Y; y < rect.Max.Y; y++ {
				clear(canvas.Pix[canvas.PixOffset(rect.Min.X, y):canvas.PixOffset(rect.Max.X, y)])
			}
		case gif.DisposalPrevious:
			canvas = saved
		}
	}
	return a, nil
}

// drawPalettedOver draws the opaque pixels of a GIF frame onto the canvas within rect; GIF
// colours are opaque or fully transparent, so that is all blending means here.
func drawPalettedOver(canvas *image.NRGBA, fr *image.Paletted, rect image.Rectangle) {
	pal := paletteNRGBA(fr.Palette)
	for y := rect.Min.Y; y < rect.Max.Y; y++ {
		src := fr.Pix[fr.PixOffset(rect.Min.X, y):]
		dst := canvas.Pix[canvas.PixOffset(rect.Min.X, y):]
		for x := 0; x < rect.Dx(); x++ {
			if int(src[x]) >= len(pal) {
				continue
			}
			c := pal[src[x]]
			if c.A == 0 {
				continue
			}
			dst[4*x], dst[4*x+1], dst[4*x+2], dst[4*x+3] = c.R, c.G, c.B, c.A
		}
	}
}

func cloneNRGBA(m *image.NRGBA) *image.NRGBA {
	c := *m
	c.Pix = append([]byte(nil), m.Pix...)
	return &c
}

// gifToWebPLoop converts GIF's loop count (0 forever, -1 once, n repeats after the first
// play) to WebP's (0 forever, n plays).
func gifToWebPLoop(n int) int {
	switch {
	case n == 0:
		return 0
	case n < 0:
		return 1
	}
	return n + 1
}

// webPToGIFLoop is the inverse of gifToWebPLoop.
func webPToGIFLoop(n int) int {
	switch {
	case n <= 0:
		return 0
	case n == 1:
		return -1
	}
	return n - 1
}

// encodeGIFAll writes an animated GIF, each frame with its own palette (exact when it has at
// most 256 colours, else median cut and dithering). Frames with transparency are disposed
// to the background before the next, since each frame is a full canvas.
func encodeGIFAll(ctx context.Context, w io.Writer, a *animation, _ convert.Options) error {
	g := &gif.GIF{LoopCount: webPToGIFLoop(a.loopCount)}
	transparent := false
	for i, f := range a.frames {
		pm, err := toPaletted(ctx, f)
		if err != nil {
			return err
		}
		for _, c := range pm.Palette {
			if _, _, _, al := c.RGBA(); al == 0 {
				transparent = true
			}
		}
		g.Image = append(g.Image, pm)
		g.Delay = append(g.Delay, (a.delays[i]+5)/10)
	}
	disposal := byte(gif.DisposalNone)
	if transparent {
		disposal = gif.DisposalBackground
	}
	for range g.Image {
		g.Disposal = append(g.Disposal, disposal)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b := a.frames[0].Bounds()
	g.Config = image.Config{Width: b.Dx(), Height: b.Dy()} // no global palette: each frame has its own
	return gif.EncodeAll(&convert.ContextWriter{Ctx: ctx, W: w}, g)
}
