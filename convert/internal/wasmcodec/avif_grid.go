package wasmcodec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"sync"
	"sync/atomic"

	"github.com/convsvc/convsvc/convert/internal/isobmff"
	"github.com/convsvc/convsvc/convert/internal/rowcount"
)

// AVIF grids. libaom runs on one thread in its WebAssembly instance, so a large image is cut
// into horizontal bands of the full width, each band encoded in an instance of its own at
// once (as native encoders split a frame into tiles for their threads), and the coded bands
// are stored as the cells of an AVIF grid image ("grid" derived item, ISO/IEC 23008-12 6.6.2.3),
// which every AVIF decoder joins back. Each band is coded at the same settings; the seams are
// band edges, as between the superblocks of one frame.

// avifMinBandPixels is the fewest pixels a band gets: below about a quarter megapixel the
// encoder's fixed start-up cost makes a second instance pointless.
const avifMinBandPixels = 1 << 18

// avifMinBandHeight is the smallest band height: libavif and MIAF want grid cells of at
// least 64x64, and bands this tall keep the seams few.
const avifMinBandHeight = 128

// AVIFTiles returns how many bands EncodeAVIF cuts a width x height image into when asked for
// at most max: 1 (a plain image) when max is 1 or less, a side is odd (MIAF wants a 4:2:0
// grid's size and its cells' even), or bands would be under a quarter megapixel or 128 rows.
func AVIFTiles(width, height, max int) int {
	if max <= 1 || width <= 0 || height <= 0 || width%2 != 0 || height%2 != 0 {
		return 1
	}
	n := min(max, int(int64(width)*int64(height)/avifMinBandPixels), height/avifMinBandHeight)
	if n <= 1 {
		return 1
	}
	bh := avifBandHeight(height, n)
	return (height + bh - 1) / bh
}

// avifBandHeight is the height of every band when height is cut into n: even, and the last
// band (padded to it) holds at least one row of the image.
func avifBandHeight(height, n int) int {
	bh := (height + n - 1) / n
	return bh + bh%2
}

// avifBand returns band i of m, bh rows from row i*bh, as its own packed image: a view of m's
// pixels, or, for a last band short of bh rows, a copy whose missing rows repeat the last.
func avifBand(m *image.RGBA, i, bh int) *image.RGBA {
	width, height := m.Rect.Dx(), m.Rect.Dy()
	stride := 4 * width
	y0, y1 := i*bh, min((i+1)*bh, height)
	if y1-y0 == bh {
		return &image.RGBA{Pix: m.Pix[y0*stride : y1*stride], Stride: stride, Rect: image.Rect(0, 0, width, bh)}
	}
	pix := make([]byte, bh*stride)
	n := copy(pix, m.Pix[y0*stride:y1*stride])
	last := m.Pix[(y1-1)*stride : y1*stride]
	for p := n; p < len(pix); p += stride {
		copy(pix[p:], last)
	}
	return &image.RGBA{Pix: pix, Stride: stride, Rect: image.Rect(0, 0, width, bh)}
}

// encodeAVIFGrid encodes m as n bands, each in an instance of its own (the first at once, the
// others once opts.Reserve grants their memory), and writes the AVIF grid of them.
func encodeAVIFGrid(ctx context.Context, w io.Writer, m *image.RGBA, opts AVIFOptions, n int) error {
	width, height := m.Rect.Dx(), m.Rect.Dy()
	bh := avifBandHeight(height, n)
	cells := make([][]byte, n)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	// work encodes bands until none is left; the first failure cancels the others and is
	// the cause of ctx.
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= n || ctx.Err() != nil {
				return
			}
			err := encodeAVIFOne(ctx, avifBand(m, i, bh), true, opts, func(b []byte) error {
				cells[i] = bytes.Clone(b)
				return nil
			})
			if err != nil {
				cancel(err)
				return
			}
			rowcount.Add(ctx, min(bh, height-i*bh)) // the job's progress (convert/image)
		}
	}

	// noneLeft is closed once every band is taken: instances still waiting for memory give up.
	noneLeft := make(chan struct{})
	var wg sync.WaitGroup
	for k := 1; k < n; k++ {
		wg.Go(func() {
			if opts.Reserve == nil {
				work()
				return
			}
			rctx, rcancel := context.WithCancel(ctx)
			go func() {
				select {
				case <-noneLeft:
					rcancel()
				case <-rctx.Done():
				}
			}()
			release, err := opts.Reserve(rctx, int64(width)*int64(bh))
			rcancel()
			if err != nil {
				return // no memory before the bands ran out (or the job ended): not needed
			}
			defer release()
			work()
		})
	}
	work()
	close(noneLeft)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	file, err := avifGridFile(width, height, bh, cells)
	if err != nil {
		return err
	}
	if _, err := w.Write(file); err != nil {
		return fmt.Errorf("avif: write: %w", err)
	}
	return nil
}

// avifCell is what a grid needs of one band's AVIF file, as libavif wrote it.
type avifCell struct {
	ftyp  []byte   // the whole ftyp box
	hdlr  []byte   // the whole hdlr box
	props [][]byte // the image's property boxes but ispe (av1C, pixi, colr), whole
	data  []byte   // the coded image (the item's one extent)
}

// parseAVIFCell reads back a still AVIF libavif wrote: one item, one extent in the file.
func parseAVIFCell(file []byte) (avifCell, error) {
	var c avifCell
	bad := func(what string) (avifCell, error) {
		return avifCell{}, fmt.Errorf("%w: band file: %s", ErrAVIFEncode, what)
	}
	var meta []byte
	for _, b := range isobmff.Children(file) {
		switch b.Type {
		case "ftyp":
			c.ftyp = b.Whole
		case "meta":
			if len(b.Payload) < 4 {
				return bad("short meta")
			}
			meta = b.Payload[4:] // after version and flags
		}
	}
	if c.ftyp == nil || meta == nil {
		return bad("no ftyp or meta")
	}
	var offset, length uint64
	found := false
	for _, b := range isobmff.Children(meta) {
		switch b.Type {
		case "hdlr":
			c.hdlr = b.Whole
		case "iloc":
			var err error
			if offset, length, err = ilocOnlyExtent(b.Payload); err != nil {
				return bad(err.Error())
			}
			found = true
		case "iprp":
			for _, p := range isobmff.Children(b.Payload) {
				if p.Type != "ipco" {
					continue
				}
				for _, prop := range isobmff.Children(p.Payload) {
					if prop.Type != "ispe" {
						c.props = append(c.props, prop.Whole)
					}
				}
			}
		}
	}
	if !found || c.hdlr == nil || len(c.props) == 0 {
		return bad("no iloc, hdlr or properties")
	}
	if offset > uint64(len(file)) || length > uint64(len(file))-offset || length == 0 {
		return bad("extent outside the file")
	}
	c.data = file[offset : offset+length]
	return c, nil
}

// ilocOnlyExtent returns the file offset and length of the single extent of the single item
// in an iloc box's body (versions 0 to 2, construction method 0).
func ilocOnlyExtent(b []byte) (offset, length uint64, err error) {
	if len(b) < 6 {
		return 0, 0, errors.New("short iloc")
	}
	version := b[0]
	offSize, lenSize := int(b[4]>>4), int(b[4]&15)
	baseSize, idxSize := int(b[5]>>4), int(b[5]&15)
	p := 6
	read := func(n int) (uint64, bool) {
		if n != 0 && n != 2 && n != 4 && n != 8 || p+n > len(b) {
			return 0, false
		}
		var v uint64
		for _, x := range b[p : p+n] {
			v = v<<8 | uint64(x)
		}
		p += n
		return v, true
	}
	countSize, idSize := 2, 2
	if version == 2 {
		countSize, idSize = 4, 4
	}
	count, ok := read(countSize)
	if !ok || count != 1 {
		return 0, 0, errors.New("iloc: not one item")
	}
	if _, ok = read(idSize); !ok {
		return 0, 0, errors.New("short iloc")
	}
	if version >= 1 {
		cm, ok := read(2)
		if !ok || cm&15 != 0 {
			return 0, 0, errors.New("iloc: not in the file")
		}
	}
	_, ok1 := read(2) // data_reference_index
	base, ok2 := read(baseSize)
	extents, ok3 := read(2)
	if !ok1 || !ok2 || !ok3 || extents != 1 {
		return 0, 0, errors.New("iloc: not one extent")
	}
	if version >= 1 && idxSize > 0 {
		if _, ok = read(idxSize); !ok {
			return 0, 0, errors.New("short iloc")
		}
	}
	off, ok1 := read(offSize)
	length, ok2 = read(lenSize)
	if !ok1 || !ok2 {
		return 0, 0, errors.New("short iloc")
	}
	return base + off, length, nil
}

// avifGridFile writes the AVIF whose primary item is a grid of one column of bands, each
// width x bh, cropped to width x height: item 1 is the grid, items 2.. the bands (hidden).
// The bands' files must agree in brands, handler and properties.
func avifGridFile(width, height, bh int, files [][]byte) ([]byte, error) {
	cells := make([]avifCell, len(files))
	for i, f := range files {
		c, err := parseAVIFCell(f)
		if err != nil {
			return nil, err
		}
		if i > 0 && !(bytes.Equal(c.ftyp, cells[0].ftyp) && bytes.Equal(c.hdlr, cells[0].hdlr) && bytes.Equal(bytes.Join(c.props, nil), bytes.Join(cells[0].props, nil))) {
			return nil, fmt.Errorf("%w: the bands were coded with different settings", ErrAVIFEncode)
		}
		cells[i] = c
	}
	n := len(cells)
	if n < 2 || n > 255 || width > 65535 || height > 65535 {
		return nil, fmt.Errorf("%w: %d bands of %dx%d", ErrAVIFEncode, n, width, height)
	}
	first := cells[0]

	ispe := func(w, h int) []byte { return isoBox("ispe", fullBox(0, 0), u32(w), u32(h)) }

	// Properties: 1 the grid's ispe, 2 the bands' ispe, then the bands' own (av1C, pixi, colr).
	props := [][]byte{ispe(width, height), ispe(width, bh)}
	props = append(props, first.props...)
	var gridAssoc, cellAssoc []byte
	gridAssoc = append(gridAssoc, 1)
	cellAssoc = append(cellAssoc, 2)
	for i, p := range first.props {
		idx := byte(3 + i)
		switch string(p[4:8]) {
		case "av1C":
			cellAssoc = append(cellAssoc, 0x80|idx) // essential
		default: // pixi, colr and any other descriptive property: both
			gridAssoc = append(gridAssoc, idx)
			cellAssoc = append(cellAssoc, idx)
		}
	}
	if len(props) > 127 {
		return nil, fmt.Errorf("%w: too many properties", ErrAVIFEncode)
	}
	ipma := append(fullBox(0, 0), u32(1+n)...)
	ipma = append(ipma, u16(1)...)
	ipma = append(ipma, byte(len(gridAssoc)))
	ipma = append(ipma, gridAssoc...)
	for i := range n {
		ipma = append(ipma, u16(2+i)...)
		ipma = append(ipma, byte(len(cellAssoc)))
		ipma = append(ipma, cellAssoc...)
	}
	iprp := isoBox("iprp", isoBox("ipco", props...), isoBox("ipma", ipma))

	infe := func(id int, typ string, flags uint32) []byte {
		return isoBox("infe", fullBox(2, flags), u16(id), u16(0), []byte(typ), []byte("Color\x00"))
	}
	entries := [][]byte{fullBox(0, 0), u16(1 + n), infe(1, "grid", 0)}
	for i := range n {
		entries = append(entries, infe(2+i, "av01", 1)) // hidden: shown only through the grid
	}
	iinf := isoBox("iinf", entries...)

	dimg := []byte{}
	dimg = append(dimg, u16(1)...)
	dimg = append(dimg, u16(n)...)
	for i := range n {
		dimg = append(dimg, u16(2+i)...)
	}
	iref := isoBox("iref", fullBox(0, 0), isoBox("dimg", dimg))

	// ImageGrid: version 0, flags 0 (16-bit sizes), rows - 1, columns - 1, output size.
	grid := []byte{0, 0, byte(n - 1), 0}
	grid = append(grid, u16(width)...)
	grid = append(grid, u16(height)...)

	// iloc (version 0, 4-byte offsets and lengths): offsets are absolute, known once the
	// boxes before mdat are laid out, which they are here with placeholders of fixed size.
	ilocBox := func(mdatData int) []byte {
		b := append(fullBox(0, 0), 0x44, 0x00)
		b = append(b, u16(1+n)...)
		add := func(id, off, length int) {
			b = append(b, u16(id)...)
			b = append(b, u16(0)...) // data_reference_index: this file
			b = append(b, u16(1)...) // one extent
			b = append(b, u32(off)...)
			b = append(b, u32(length)...)
		}
		off := mdatData
		add(1, off, len(grid))
		off += len(grid)
		for i, c := range cells {
			add(2+i, off, len(c.data))
			off += len(c.data)
		}
		return isoBox("iloc", b)
	}
	pitm := isoBox("pitm", fullBox(0, 0), u16(1))
	metaFor := func(mdatData int) []byte {
		return isoBox("meta", fullBox(0, 0), first.hdlr, pitm, ilocBox(mdatData), iinf, iref, iprp)
	}
	head := len(first.ftyp) + len(metaFor(0)) + 8 // mdat's data starts after its header
	size := len(grid)
	for _, c := range cells {
		size += len(c.data)
	}
	if uint64(head)+uint64(size) > 1<<32-1 {
		return nil, fmt.Errorf("%w: grid over 4 GiB", ErrAVIFEncode)
	}
	out := make([]byte, 0, head+size)
	out = append(out, first.ftyp...)
	out = append(out, metaFor(head)...)
	out = append(out, u32(8+size)...)
	out = append(out, "mdat"...)
	out = append(out, grid...)
	for _, c := range cells {
		out = append(out, c.data...)
	}
	return out, nil
}
