package archive

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"

	"github.com/convsvc/convsvc/convert"
)

// registerVerifiers adds the output check of each archive format: every entry is listed.
// Zip and plain tar are checked by their headers (verifyZip, verifyPlainTar). A compressed tar
// can only be listed by decompressing it, so tar.gz's CRC-32 and length and tar.zst's
// checksum are compared with the bytes as well. Zip, tar and gzip are read with the standard
// library (the writers are archive/zip and archive/tar, whose readers are separate code, and
// klauspost's gzip); tar.zst has only klauspost's zstd decoder, the package that also writes
// it (docs/reliability.md).
func registerVerifiers(c *convert.Catalog) {
	c.AddVerifier("zip", verifyZip)
	c.AddVerifier("tar", verifyPlainTar)
	c.AddVerifier("tgz", func(ctx context.Context, out *io.SectionReader, _ convert.Check) error {
		gz, err := gzip.NewReader(bufio.NewReaderSize(out, 64<<10))
		if err != nil {
			return fmt.Errorf("the gzip stream does not open: %w", err)
		}
		gz.Multistream(false)
		return verifyTar(ctx, gz)
	})
	c.AddVerifier("tzst", func(ctx context.Context, out *io.SectionReader, _ convert.Check) error {
		d, err := zstd.NewReader(bufio.NewReaderSize(out, 64<<10), zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(archiveMaxWindow), zstd.WithDecoderLowmem(true))
		if err != nil {
			return fmt.Errorf("the zstd stream does not open: %w", err)
		}
		defer d.Close()
		return verifyTar(ctx, d)
	})
}

// verifyZip lists every entry of a zip with its CRC-32 from the central directory and wants
// each entry's local header where the directory puts it and its data inside the file. The
// entries are not inflated: reading them back cost 35% of a tar -> zip conversion
// (docs/benchmarks.md), and a zip cut short loses its central directory.
func verifyZip(ctx context.Context, out *io.SectionReader, _ convert.Check) error {
	zr, err := zip.NewReader(out, out.Size())
	if err != nil {
		return fmt.Errorf("the zip does not open: %w", err)
	}
	if len(zr.File) == 0 {
		return errors.New("the zip has no entries")
	}
	for _, f := range zr.File {
		if err := ctx.Err(); err != nil {
			return err
		}
		off, err := f.DataOffset()
		if err != nil {
			return fmt.Errorf("entry %q has no local header where the central directory puts it: %w", f.Name, err)
		}
		if off+int64(f.CompressedSize64) > out.Size() {
			return fmt.Errorf("entry %q reaches past the end of the file", f.Name)
		}
		if f.CRC32 == 0 && f.UncompressedSize64 > 0 {
			return fmt.Errorf("entry %q has no CRC-32", f.Name)
		}
	}
	return nil
}

// verifyPlainTar lists every entry of a tar file, seeking over the data (the headers'
// checksums are checked, and each entry's data must lie inside the file), and wants the
// end-of-archive marker at the end.
func verifyPlainTar(ctx context.Context, out *io.SectionReader, _ convert.Check) error {
	tr := tar.NewReader(io.NewSectionReader(out, 0, out.Size()))
	n := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("the tar file breaks after %d entries: %w", n, err)
		}
		n++
	}
	if n == 0 {
		return errors.New("the archive has no entries")
	}
	end := make([]byte, 1024)
	if out.Size() < 1024 {
		return errors.New("the tar file lacks its end-of-archive marker: it was cut short")
	}
	if _, err := out.ReadAt(end, out.Size()-1024); err != nil {
		return err
	}
	for _, b := range end {
		if b != 0 {
			return errors.New("the tar file lacks its end-of-archive marker (two zero blocks): it was cut short")
		}
	}
	return nil
}

// verifyTar reads every entry of a tar stream to its end, then the rest of the stream, so a
// compressor's trailer (gzip's CRC-32 and length, zstd's checksum) is checked too.
func verifyTar(ctx context.Context, r io.Reader) error {
	tail := &tailReader{r: &convert.ContextReader{Ctx: ctx, R: r}}
	r = tail
	tr := tar.NewReader(r)
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("the tar stream breaks after %d entries: %w", n, err)
		}
		n++
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return fmt.Errorf("entry %q does not read back: %w", h.Name, err)
		}
	}
	if n == 0 {
		return errors.New("the archive has no entries")
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return fmt.Errorf("the stream after the last entry does not read back: %w", err)
	}
	if !tail.endMarker() {
		return errors.New("the tar stream lacks its end-of-archive marker (two zero blocks): it was cut short")
	}
	return nil
}

// tailReader remembers the last 1024 bytes read through it: a whole tar stream ends with
// two zero blocks.
type tailReader struct {
	r    io.Reader
	tail [1024]byte
	n    int64
}

func (t *tailReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n >= len(t.tail) {
		copy(t.tail[:], p[n-len(t.tail):n])
	} else if n > 0 {
		copy(t.tail[:], t.tail[n:])
		copy(t.tail[len(t.tail)-n:], p[:n])
	}
	t.n += int64(n)
	return n, err
}

// endMarker reports whether the stream ended with 1024 zero bytes.
func (t *tailReader) endMarker() bool {
	if t.n < int64(len(t.tail)) {
		return false
	}
	for _, b := range t.tail {
		if b != 0 {
			return false
		}
	}
	return true
}
