package tiffstrip

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// maxPrefetchStrip is the largest strip, decoded, that Prefetch holds whole: a file in fewer,
// larger strips (one strip for the whole image, say) is read a row at a time as before.
const maxPrefetchStrip = 16 << 20

// prefetch is the state of a decoder that decompresses the strips ahead of the one ReadRows
// is at, each in a goroutine of its own with its own decompressor (Prefetch).
type prefetch struct {
	window int         // strips launched and not yet read out, at most
	jobs   []*stripJob // by strip: launched and not yet read out, else nil
	next   int         // the next strip to launch
	cur    *stripJob   // the strip ReadRows is in, or nil between strips
	bufs   [][]byte    // free strip buffers
	wds    []*Decoder  // free decompressing decoders (each its own inflater)
	stop   atomic.Bool // set when ReadRows failed: the jobs stop at their next row
	wg     sync.WaitGroup
}

// stripJob is one strip decompressed by a goroutine, rows as stored, with the outcome
// readRow and the sequential decoder's read past the last row would have had.
type stripJob struct {
	done     chan struct{} // closed when the fields below are set
	wd       *Decoder
	buf      []byte
	rows     int   // rows read whole into buf
	err      error // what reading row `rows` returned (nil when every row was read)
	endErr   error // what reading past the last row returned
	panicked any   // a panic of the decompressor, raised again by ReadRows
}

// stripBytes is the size of a strip as stored, decompressed.
func (d *Decoder) stripBytes() int64 {
	return int64(d.samples) * int64(d.width) * int64(d.rowsPerStrip)
}

// prefetchWindow is how many strips Prefetch(workers) keeps in flight, 0 when it would not
// prefetch: a tiled or uncompressed file, fewer than two strips, strips over
// maxPrefetchStrip, or fewer than two workers.
func (d *Decoder) prefetchWindow(workers int) int {
	strips := (d.height + d.rowsPerStrip - 1) / max(d.rowsPerStrip, 1)
	if d.tiled || workers < 2 || strips < 2 || d.stripBytes() > maxPrefetchStrip {
		return 0
	}
	switch d.compression {
	case cLZW, cDeflate, cDeflateOld:
	default:
		return 0
	}
	return min(workers+1, strips)
}

// PrefetchBytes is what Prefetch(workers) would hold beyond what the decoder holds anyway:
// a decompressed strip and a decompressor (inflate's window and buffers, about 400 KB) for
// each strip in flight; 0 when it would not prefetch.
func (d *Decoder) PrefetchBytes(workers int) int64 {
	return int64(d.prefetchWindow(workers)) * (d.stripBytes() + 400<<10)
}

// Prefetch makes ReadRows decompress the strips of a compressed striped file (deflate, LZW)
// ahead of the row it reads, up to workers+1 strips at a time, each in a goroutine with its
// own decompressor: strips are independent, so on several cores the inflating no longer
// holds up the caller. Each strip is read with the same calls, in the same order, as the
// decoder without Prefetch reads it, so the rows and the errors are the same, at the same
// row. Call it before the first ReadRows; it reports whether it is on (see PrefetchBytes for
// when it is not, and for what it holds). The reader must allow concurrent ReadAt calls.
// After a ReadRows error the goroutines have returned; a caller that stops early for
// another reason should stop the reader's reads (its context): the goroutines then end
// with their strips.
func (d *Decoder) Prefetch(workers int) bool {
	w := d.prefetchWindow(workers)
	if w == 0 || d.y != 0 || d.src != nil || d.pf != nil {
		return false
	}
	strips := (d.height + d.rowsPerStrip - 1) / d.rowsPerStrip
	d.pf = &prefetch{window: w, jobs: make([]*stripJob, strips)}
	return true
}

// launch starts decompressing strips until window of them, from the one ReadRows is at
// (d.strip), are in flight.
func (d *Decoder) launch() {
	p := d.pf
	for p.next < len(p.jobs) && p.next-d.strip < p.window {
		j := &stripJob{done: make(chan struct{})}
		if n := len(p.bufs); n > 0 {
			j.buf, p.bufs = p.bufs[n-1], p.bufs[:n-1]
		} else {
			j.buf = make([]byte, d.stripBytes())
		}
		if n := len(p.wds); n > 0 {
			j.wd, p.wds = p.wds[n-1], p.wds[:n-1]
		} else {
			j.wd = &Decoder{r: d.r, size: d.size, width: d.width, samples: d.samples,
				compression: d.compression, rowsPerStrip: d.rowsPerStrip, offsets: d.offsets, counts: d.counts}
		}
		rows := min(d.rowsPerStrip, d.height-p.next*d.rowsPerStrip)
		p.jobs[p.next] = j
		p.wg.Add(1)
		go j.run(p.next, rows, d.samples*d.width, &p.stop, &p.wg)
		p.next++
	}
}

// run decompresses strip s, rows rows of rowLen bytes, as nextRow would read it.
func (j *stripJob) run(s, rows, rowLen int, stop *atomic.Bool, wg *sync.WaitGroup) {
	defer wg.Done()
	defer close(j.done)
	defer func() {
		if v := recover(); v != nil {
			j.panicked = v
		}
	}()
	src, closer, err := j.wd.stripReader(s)
	if err != nil {
		j.err = err
		return
	}
	if closer != nil {
		defer closer.Close()
	}
	for ; j.rows < rows; j.rows++ {
		if stop.Load() {
			j.err = errStopped
			return
		}
		if err := readRow(src, j.buf[j.rows*rowLen:(j.rows+1)*rowLen]); err != nil {
			j.err = err
			return
		}
	}
	_, j.endErr = io.Copy(io.Discard, src)
}

// errStopped ends a strip job once ReadRows has failed; no caller sees it.
var errStopped = errors.New("tiffstrip: stopped")

// nextPrefetchedRow is nextRow with Prefetch on: row d.y from its strip's job.
func (d *Decoder) nextPrefetchedRow(dst []byte) error {
	p := d.pf
	if p.cur == nil {
		s := d.y / d.rowsPerStrip
		d.strip, d.stripY0 = s, s*d.rowsPerStrip
		d.launch()
		j := p.jobs[s]
		<-j.done
		if j.panicked != nil {
			panic(j.panicked)
		}
		p.cur = j
	}
	j := p.cur
	i := d.y - d.stripY0
	if i >= j.rows {
		err := j.err
		d.doneStrip()
		return err
	}
	rowLen := d.samples * d.width
	d.convertRow(dst, j.buf[i*rowLen:(i+1)*rowLen])
	d.y++
	if d.y == d.height || d.y-d.stripY0 == d.rowsPerStrip {
		err := j.endErr
		d.doneStrip()
		return err
	}
	return nil
}

// doneStrip gives the current strip's buffer and decompressor back for the strips after.
func (d *Decoder) doneStrip() {
	p := d.pf
	p.jobs[d.strip] = nil
	p.bufs = append(p.bufs, p.cur.buf)
	p.wds = append(p.wds, p.cur.wd)
	p.cur = nil
}

// stopPrefetch stops the strip jobs still running and waits for them.
func (d *Decoder) stopPrefetch() {
	if d.pf == nil {
		return
	}
	d.pf.stop.Store(true)
	d.pf.wg.Wait()
}
