package image

import (
	"context"
	"image"
	"io"
	"runtime"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/internal/tiffstrip"
)

// tiffToJPEG converts a baseline striped or tiled 8-bit TIFF (tiffstrip's subset) to a JPEG
// a strip at a time, as pngToJPEG does a PNG: the same bytes as x/image/tiff's decode
// followed by encodeJPEG, with nothing the size of the image held (a tiled file: one row of
// tiles; a compressed striped one: GOMAXPROCS+1 strips inflated ahead, in parallel, by
// tiffstrip's Prefetch; tiffStreamExtra). handled is false, with nothing written, for a TIFF tiffstrip
// leaves to x/image/tiff (planar, 16-bit, palettes, other compressions).
func tiffToJPEG(ctx context.Context, in *io.SectionReader, out io.Writer, codec *Codec, cfg image.Config, opts convert.Options, translucent func()) (handled bool, err error) {
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	src := newInputReader(dctx, in)
	var d *tiffstrip.Decoder
	var ok bool
	err = GuardCodec(codec.Name+" decoder", func() (err error) {
		d, ok, err = tiffstrip.NewDecoder(src, src.Size())
		return err
	})
	if err != nil {
		return true, decodeError(ctx, codec, src, err)
	}
	if !ok {
		return false, nil
	}
	d.Prefetch(runtime.GOMAXPROCS(0)) // held in tiffStreamExtra's estimate
	return stripsToJPEG(ctx, dctx, stop, src, d, out, codec, cfg, opts, d.Opaque(), translucent)
}

// tiffStreamExtra is what tiffToJPEG holds for the TIFF in in beyond streamJPEGCost: for a
// tiled file tiffstrip's decoded row of tiles, one stored tile and the tile offsets; for a
// compressed striped file the strips its Prefetch inflates ahead, with their inflaters; 0 for
// another striped file and for one tiffstrip leaves to x/image/tiff. stream is false for a
// tiled file whose row of tiles is more than half the image: holding it wins nothing over
// the whole-image decode, which the caller then does.
func tiffStreamExtra(in *io.SectionReader) (extra int64, stream bool) {
	d, ok, err := tiffstrip.NewDecoder(in, in.Size())
	if !ok || err != nil {
		return 0, true
	}
	extra, stream = tileRowExtra(d)
	return extra + d.PrefetchBytes(runtime.GOMAXPROCS(0)), stream
}

// tileRowExtra is what a strip consumer of d holds beyond its own strips: for a tiled file
// the decoded row of tiles, one stored tile and the tile offsets (TileBufferBytes), 0 for a
// striped file. stream is false when the row of tiles is more than half the image.
func tileRowExtra(d *tiffstrip.Decoder) (extra int64, stream bool) {
	if extra = d.TileBufferBytes(); extra > 0 && 2*d.RowsPerStrip() > d.Bounds().Dy() {
		return 0, false
	}
	return extra, true
}
