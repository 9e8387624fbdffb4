// Package flacenc is a FLAC encoder: per subframe the smaller of a fixed predictor (orders 0
// to 4, chosen by a one-pass residual estimate) and an LPC predictor (orders up to 8 from a
// tukey(0.5)-windowed autocorrelation, as flac -5), low bits that are zero in every sample
// shifted out (wasted bits), stereo coded as left/right, left/side, side/right or mid/side by
// an estimate over all four, partitioned Rice coding whose partition order and parameters come
// from running sums of the folded residuals, a 64-bit word-at-a-time bit writer, and frames
// encoded in parallel (FLAC frames are independent). It never allocates per sample: each
// worker keeps its scratch buffers between frames.
package flacenc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"

	"github.com/convsvc/convsvc/convert/internal/flaccrc"
)

// Info describes the stream being encoded.
type Info struct {
	// Rate is the sample rate in Hz (1 to 655350).
	Rate int
	// Channels is the channel count (1 to 8).
	Channels int
	// Bits is the sample depth (8, 12, 16, 20 or 24, the depths frame headers name).
	Bits int
	// Samples is the samples per channel, or 0 when unknown.
	Samples int64
	// BlockSize is the samples per channel in every frame but the last (16 to 65535).
	BlockSize int
	// FrameRate, when true, names the sample rate in each frame header when FLAC has a
	// code for it; otherwise frames refer to STREAMINFO.
	FrameRate bool
}

// Encoder writes a FLAC stream: the header on creation, then frames of Info.BlockSize
// samples per channel as blocks are written. It is not safe for concurrent use.
type Encoder struct {
	w       io.Writer
	inf     Info
	workers []*frameEncoder
	pending [][][]int32 // queued blocks, each channels x samples (owned copies)
	spare   [][][]int32 // recycled block buffers
	out     [][]byte    // encoded frames of the batch
	frameNo uint64
	batch   int
	err     error
}

// NewEncoder validates inf and writes the "fLaC" marker and STREAMINFO (its MD5 signature
// zero, which FLAC allows) to w. workers bounds the goroutines that encode frames; 0 means
// GOMAXPROCS.
func NewEncoder(w io.Writer, inf Info, workers int) (*Encoder, error) {
	switch {
	case inf.Channels < 1 || inf.Channels > 8:
		return nil, fmt.Errorf("flacenc: %d channels, FLAC holds 1 to 8", inf.Channels)
	case inf.Bits > 24 || depthCodes[max(inf.Bits, 0)] == 0:
		return nil, fmt.Errorf("flacenc: %d-bit samples, this encoder holds 8, 12, 16, 20 or 24", inf.Bits)
	case inf.Rate < 1 || inf.Rate >= 1<<20:
		return nil, fmt.Errorf("flacenc: sample rate %d out of range", inf.Rate)
	case inf.BlockSize < 16 || inf.BlockSize > 65535:
		return nil, fmt.Errorf("flacenc: block size %d out of range", inf.BlockSize)
	case inf.Samples < 0 || inf.Samples >= 1<<36:
		return nil, fmt.Errorf("flacenc: %d samples out of range", inf.Samples)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, 16)
	e := &Encoder{w: w, inf: inf, batch: 4 * workers}
	for range workers {
		e.workers = append(e.workers, &frameEncoder{inf: &e.inf})
	}
	var hdr [4 + 4 + 34]byte
	copy(hdr[:], "fLaC")
	hdr[4] = 0x80 // last metadata block, type 0 (STREAMINFO)
	hdr[7] = 34
	si := hdr[8:]
	binary.BigEndian.PutUint16(si[0:], uint16(inf.BlockSize))
	binary.BigEndian.PutUint16(si[2:], uint16(inf.BlockSize))
	// si[4:10]: minimum and maximum frame size, 0 (unknown).
	packed := uint64(inf.Rate)<<44 | uint64(inf.Channels-1)<<41 | uint64(inf.Bits-1)<<36 | uint64(inf.Samples)
	binary.BigEndian.PutUint64(si[10:], packed)
	// si[18:34]: MD5, zero.
	if _, err := w.Write(hdr[:]); err != nil {
		return nil, err
	}
	return e, nil
}

// Write queues one block of samples per channel (each channel the same length, at most
// Info.BlockSize; only the last block may be shorter) and encodes queued blocks once a batch
// is full. The encoder copies the samples; the caller may reuse chans.
func (e *Encoder) Write(chans [][]int32) error {
	if e.err != nil {
		return e.err
	}
	if len(chans) != e.inf.Channels {
		return fmt.Errorf("flacenc: %d channels written, the stream has %d", len(chans), e.inf.Channels)
	}
	n := len(chans[0])
	if n == 0 {
		return nil
	}
	if n > e.inf.BlockSize {
		return fmt.Errorf("flacenc: block of %d samples, over the block size %d", n, e.inf.BlockSize)
	}
	var blk [][]int32
	if k := len(e.spare); k > 0 {
		blk, e.spare = e.spare[k-1], e.spare[:k-1]
	} else {
		blk = make([][]int32, e.inf.Channels)
	}
	for i, c := range chans {
		if len(c) != n {
			return errors.New("flacenc: channels differ in length")
		}
		blk[i] = append(blk[i][:0], c...)
	}
	e.pending = append(e.pending, blk)
	if len(e.pending) >= e.batch {
		return e.flush()
	}
	return nil
}

// Close encodes and writes the queued blocks. It does not close the underlying writer.
func (e *Encoder) Close() error {
	if e.err != nil {
		return e.err
	}
	return e.flush()
}

func (e *Encoder) flush() error {
	n := len(e.pending)
	if n == 0 {
		return nil
	}
	for len(e.out) < n {
		e.out = append(e.out, nil)
	}
	encode := func(w *frameEncoder, i int) {
		e.out[i] = w.encode(e.out[i][:0], e.pending[i], e.frameNo+uint64(i))
	}
	if len(e.workers) == 1 || n == 1 {
		for i := range n {
			encode(e.workers[0], i)
		}
	} else {
		var wg sync.WaitGroup
		for wi, w := range e.workers {
			if wi >= n {
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := wi; i < n; i += len(e.workers) {
					encode(w, i)
				}
			}()
		}
		wg.Wait()
	}
	for i := range n {
		if _, err := e.w.Write(e.out[i]); err != nil {
			e.err = err
			return err
		}
	}
	e.frameNo += uint64(n)
	e.spare = append(e.spare, e.pending...)
	clear(e.pending)
	e.pending = e.pending[:0]
	return nil
}

// frameEncoder encodes one frame at a time; its buffers live as long as the Encoder.
type frameEncoder struct {
	inf    *Info
	bw     bitWriter
	side   []int32   // side channel (bps+1)
	mid    []int32   // mid channel
	res    []int32   // residuals of the chosen predictor
	fold   []uint32  // zigzag-folded residuals
	sums   []uint64  // per partition sums at every order, highest order first
	ks     []uint8   // Rice parameters of the partition order being tried
	bestK  []uint8   // Rice parameters of the best partition order
	bestP  int       // the best partition order
	window []float64 // tukey(0.5) window of the last block size
	wx     []float64 // the windowed block
	ready  *int32    // the block whose residuals f.fold and Rice plan hold (its first sample)
	wbuf   []int32   // a block shifted right by its wasted bits
}

// Channel assignments (FLAC frame header, 4 bits).
const (
	chanLeftSide  = 8
	chanSideRight = 9
	chanMidSide   = 10
)

// encode appends the frame of blk (numbered frameNo) to dst.
func (f *frameEncoder) encode(dst []byte, blk [][]int32, frameNo uint64) []byte {
	inf := f.inf
	n := len(blk[0])
	f.bw.reset(dst)
	bw := &f.bw
	start := len(dst)

	assign := inf.Channels - 1
	var orders [4]int // the best fixed orders of left, right, side and mid
	if inf.Channels == 2 {
		assign, orders = f.stereoMode(blk[0], blk[1])
	}

	// Header.
	bw.write(0xFFF8, 16) // sync code, reserved 0, fixed block size
	bsCode, bsExtra := uint64(7), true
	if n == 4096 {
		bsCode, bsExtra = 12, false
	}
	rateCode := uint64(0)
	if inf.FrameRate {
		rateCode = rateCodes[inf.Rate]
	}
	bw.write(bsCode<<4|rateCode, 8)
	bw.write(uint64(assign)<<4|uint64(depthCodes[inf.Bits])<<1, 8)
	writeUTF8(bw, frameNo)
	if bsExtra {
		bw.write(uint64(n-1), 16)
	}
	hdrEnd := bw.flushBytes()
	bw.write(uint64(flaccrc.CRC8(bw.buf[start:hdrEnd])), 8)

	// Subframes.
	if inf.Channels == 2 {
		l, r := blk[0], blk[1]
		a, b := l, r
		abps, bbps := inf.Bits, inf.Bits
		ao, bo := orders[0], orders[1]
		switch assign {
		case chanLeftSide:
			b, bbps, bo = f.side, inf.Bits+1, orders[2]
		case chanSideRight:
			a, abps, ao = f.side, inf.Bits+1, orders[2]
		case chanMidSide:
			a, b, bbps, ao, bo = f.mid, f.side, inf.Bits+1, orders[3], orders[2]
		}
		f.subframe(a, abps, ao)
		f.subframe(b, bbps, bo)
	} else {
		for _, c := range blk {
			f.subframe(c, inf.Bits, -1)
		}
	}
	bw.pad()
	out := bw.buf
	crc := flaccrc.CRC16(out[start:])
	return append(out, byte(crc>>8), byte(crc))
}

// stereoMode chooses the channel assignment of a stereo block, fills f.side and f.mid, and
// returns the best fixed predictor orders of left, right, side and mid found on the way:
// the assignment whose two channels' best fixed predictors leave the fewest expected bits
// (n log2 of the mean residual magnitude each), libFLAC's adaptive mid/side estimate over all
// four channels. (Planning the two best assignments in full when they came within 1-3% of
// each other, as flac -5's exhaustive mid/side does for all four, gained 0.1-0.5% in size on
// the recordings measured, docs/benchmarks.md, for 25-50% more CPU.)
func (f *frameEncoder) stereoMode(l, r []int32) (assign int, orders [4]int) {
	n := len(l)
	f.side, f.mid = grow(f.side, n), grow(f.mid, n)
	for i := range n {
		f.side[i] = l[i] - r[i]
		f.mid[i] = (l[i] + r[i]) >> 1
	}
	orders = [4]int{-1, -1, -1, -1}
	if n <= 4 {
		return 1, orders
	}
	var est [4]float64 // left, right, side, mid
	for i, x := range [4][]int32{l, r, f.side, f.mid} {
		o, s := fixedEstimate(x)
		orders[i] = o
		est[i] = float64(n) * math.Log2(1+float64(s)/float64(n))
	}
	assign, best := 1, est[0]+est[1]
	if c := est[0] + est[2]; c < best {
		assign, best = chanLeftSide, c
	}
	if c := est[2] + est[1]; c < best {
		assign, best = chanSideRight, c
	}
	if c := est[3] + est[2]; c < best {
		assign = chanMidSide
	}
	return assign, orders
}
