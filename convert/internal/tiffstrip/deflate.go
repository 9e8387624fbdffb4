package tiffstrip

import (
	"compress/zlib"
	"io"

	"github.com/convsvc/convsvc/convert/internal/inflate"
)

// openDeflate opens a deflate strip (compression 8 or 32946): the n bytes of r at off, a zlib
// stream. Its Read gives what x/image/tiff reads, io.LimitReader(zlib.NewReader(strip),
// limit), with the same outcome (the same bytes, or the same error), but inflates with
// convert/internal/inflate in about a third of compress/zlib's time (BenchmarkDeflateStrips;
// docs/benchmarks.md, "Deflate TIFF strips through convert/internal/inflate").
//
// The two inflaters give the same bytes for every valid stream. They differ in where a broken
// one stops: compress/flate keeps the bytes of a cut stored block, inflate does not; on other
// cut streams inflate gives a few bytes more (compress/flate wants as many bits as the
// end-of-block code has before it decodes any symbol); compress/zlib reports an error together
// with the last bytes before it, inflate after them; and their flate.CorruptInputError
// offsets differ. So once inflate reports anything but a clean end, or reaches the limit
// without ending cleanly right there, the strip is inflated again with compress/zlib, the
// bytes already given are skipped, and the rest, error included, is compress/zlib's: a broken
// strip costs a second inflate, a valid one nothing. FuzzDeflateStrip checks it.
func openDeflate(r io.ReaderAt, off, n, limit int64) (io.ReadCloser, error) {
	z, err := inflate.NewReader(io.NewSectionReader(r, off, n))
	if err != nil {
		// compress/zlib's own verdict on the header (the same, unless a read error changed).
		zr, err := zlib.NewReader(io.NewSectionReader(r, off, n))
		if err != nil {
			return nil, err
		}
		return &deflateStrip{zr: zr, rest: io.LimitReader(zr, limit)}, nil
	}
	return &deflateStrip{r: r, off: off, n: n, limit: limit, z: z}, nil
}

// deflateStrip is openDeflate's reader: inflate until it stops short, compress/zlib after.
type deflateStrip struct {
	r      io.ReaderAt
	off, n int64 // the strip's compressed bytes in r
	limit  int64
	z      *inflate.Reader // nil once its part is over
	given  int64           // bytes given from z
	zr     io.ReadCloser   // compress/zlib, after z
	rest   io.Reader       // what Read returns after z: zr's limited output, an error, or nil (EOF)
}

// errReader returns its error forever.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// Read gives the strip's bytes up to the limit; see openDeflate.
func (s *deflateStrip) Read(p []byte) (int, error) {
	if s.z != nil {
		if s.given == s.limit {
			s.atLimit()
		} else {
			p := p[:min(int64(len(p)), s.limit-s.given)]
			n, err := s.z.Read(p)
			s.given += int64(n)
			switch err {
			case nil:
				return n, nil
			case io.EOF:
				s.z.Close()
				s.z = nil
				return n, io.EOF
			}
			s.toZlib()
			if n > 0 {
				return n, nil
			}
		}
	}
	if s.rest == nil {
		return 0, io.EOF
	}
	return s.rest.Read(p)
}

// atLimit decides what follows the limit. After a clean end right at it, nothing (what
// io.LimitReader gives too). Anything else is compress/zlib's to decide: a stream that fails
// right at the limit fails there with compress/zlib only if compress/flate found the error
// before it handed over the last bytes, which depends on its window; and a cut stream can
// give inflate a few more bytes than compress/flate before the error, which would hide it
// here. A valid strip never gets here (it ends before the limit), so this costs nothing.
func (s *deflateStrip) atLimit() {
	var b [1]byte
	if n, err := s.z.Read(b[:]); n == 0 && err == io.EOF {
		s.z.Close()
		s.z = nil
		return
	}
	s.toZlib()
}

// toZlib switches to compress/zlib: the strip again from its start, the bytes given skipped.
func (s *deflateStrip) toZlib() {
	s.z.Close()
	s.z = nil
	zr, err := zlib.NewReader(io.NewSectionReader(s.r, s.off, s.n))
	if err != nil {
		s.rest = errReader{err}
		return
	}
	s.zr = zr
	lr := io.LimitReader(zr, s.limit)
	// Not io.CopyN, which drops an error that comes with the last byte it wanted.
	if _, err := io.Copy(io.Discard, io.LimitReader(lr, s.given)); err != nil {
		// compress/zlib reports the error with (or before) the bytes given: it is the answer
		// to every later Read, as compress/zlib's sticky error would be.
		s.rest = errReader{err}
		return
	}
	s.rest = lr
}

// Close releases the inflaters.
func (s *deflateStrip) Close() error {
	if s.z != nil {
		s.z.Close()
		s.z = nil
	}
	if s.zr != nil {
		s.zr.Close()
	}
	return nil
}
