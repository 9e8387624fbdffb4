package archive

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/convsvc/convsvc/convert"
)

// Version names the archive family's converters' output for the conversion cache
// (convert.Converter.Version): raise it whenever a change alters what they write, so cached
// outputs of the old code are never served.
const Version = "archive/1"

// Archives: zip, tar, tgz (tar.gz) and tzst (tar.zst) repack into one another entry by entry,
// stream to stream: nothing is ever written to the filesystem, so no entry can land outside
// a directory. Entries are still vetted as an extractor would: "..", absolute paths, symbolic
// and hard links, devices and FIFOs fail the conversion naming the entry, as do encrypted zip
// entries. What is kept: names, regular files and directories, permission bits and
// modification times (to the second); owners, extended attributes and comments are not.
//
// Expansion is bounded before anything is inflated where the format states sizes (the zip
// central directory, tar headers), and counted as it happens besides.

// Archive limits.
const (
	// ArchiveMaxEntries bounds the entries of one archive.
	ArchiveMaxEntries = 100_000
	// ArchiveMaxEntryBytes bounds one entry's uncompressed size.
	ArchiveMaxEntryBytes = 2 << 30
	// ArchiveMaxTotalBytes bounds the uncompressed size of all entries together.
	ArchiveMaxTotalBytes = 4 << 30
	// ArchiveMaxRatio bounds expansion relative to the input: at most this many times its size,
	// or ArchiveMinBudget for small inputs, whichever is larger, and never more than
	// ArchiveMaxTotalBytes. Text compresses 3-20 times; bombs a thousand times and more.
	ArchiveMaxRatio = 100
	// ArchiveMinBudget is the expansion every archive may have, however small.
	ArchiveMinBudget = 64 << 20
	// archiveMaxWindow bounds the zstd window a tzst input may ask for (zstd --long=27 uses 128 MiB).
	archiveMaxWindow = 128 << 20
)

// archiveFormats are the archive ids and their names in messages.
var archiveFormats = []struct{ id, name string }{
	{"zip", "ZIP"}, {"tar", "tar"}, {"tgz", "tar.gz"}, {"tzst", "tar.zst"},
}

// Recognised formats nothing converts yet: listed so that clients see them and get
// unsupported_format rather than an unknown id.
var recognisedOnlyFormats = []convert.Format{
	{ID: "rar", Name: "RAR archive", Category: convert.CategoryArchive, Extensions: []string{"rar"}, MIME: "application/vnd.rar"},
	{ID: "7z", Name: "7-Zip archive", Category: convert.CategoryArchive, Extensions: []string{"7z"}, MIME: "application/x-7z-compressed"},
}

// Register adds the archive formats and their converters.
func Register(c *convert.Catalog) {
	for _, f := range recognisedOnlyFormats {
		c.AddFormat(f)
	}
	c.AddFormat(convert.Format{ID: "zip", Name: "ZIP archive", Category: convert.CategoryArchive, Extensions: []string{"zip"}, MIME: "application/zip"})
	c.AddFormat(convert.Format{ID: "tar", Name: "Tar archive", Category: convert.CategoryArchive, Extensions: []string{"tar"}, MIME: "application/x-tar"})
	c.AddFormat(convert.Format{ID: "tgz", Name: "Gzipped tar archive", Category: convert.CategoryArchive, Extensions: []string{"tgz", "tar.gz"}, MIME: "application/gzip"})
	c.AddFormat(convert.Format{ID: "tzst", Name: "Zstandard tar archive", Category: convert.CategoryArchive, Extensions: []string{"tzst", "tar.zst"}, MIME: "application/zstd"})
	for _, from := range archiveFormats {
		for _, to := range archiveFormats {
			if from.id != to.id {
				drops := []string{convert.WarnMetadataDropped}
				if from.id != "zip" {
					drops = []string{convert.WarnPermissionsDropped, convert.WarnMetadataDropped}
				}
				// A zip's entries are counted from its central directory, which is read
				// first (its input offset would jump to the end); a tar is read in order.
				c.AddConverter(convert.Converter{Version: Version, From: from.id, To: to.id, Run: archiveRun(from.id, to.id), Drops: drops, Counts: from.id == "zip"})
			}
		}
	}
	registerVerifiers(c)
}

// archiveEntry is one file or directory on its way from reader to writer.
type archiveEntry struct {
	name    string // cleaned, relative, slash-separated; directories end in "/"
	dir     bool
	mode    fs.FileMode // permission bits only
	modTime time.Time
	size    int64
	body    io.Reader
}

// archiveBudget counts entries and expansion across one conversion, and what the readers
// saw that no writer keeps (lost).
type archiveBudget struct {
	limit   int64
	total   int64
	entries int
	stated  int64 // the entries the input lists up front (a zip's central directory), 0 if unknown
	lost    archiveLosses
}

func newArchiveBudget(inputSize int64) *archiveBudget {
	limit := int64(ArchiveMinBudget)
	if inputSize <= ArchiveMaxTotalBytes/ArchiveMaxRatio {
		limit = max(limit, inputSize*ArchiveMaxRatio)
	} else {
		limit = ArchiveMaxTotalBytes
	}
	return &archiveBudget{limit: min(limit, ArchiveMaxTotalBytes)}
}

func (b *archiveBudget) overError(what string) error {
	return convert.Errorf(nil, "archive %s more than %s when unpacked, over the limit for this input (%d times its size, at most %s): a compression bomb?",
		what, convert.ByteSize(b.limit), ArchiveMaxRatio, convert.ByteSize(ArchiveMaxTotalBytes))
}

// admit checks an entry's stated size against the limits before its data is read.
func (b *archiveBudget) admit(name string, size int64) error {
	b.entries++
	if b.entries > ArchiveMaxEntries {
		return convert.Errorf(nil, "archive has more than %d entries, over the limit", ArchiveMaxEntries)
	}
	if size < 0 || size > ArchiveMaxEntryBytes {
		return convert.Errorf(nil, "archive entry %q is %s when unpacked, over the %s limit for one entry", name, convert.ByteSize(size), convert.ByteSize(ArchiveMaxEntryBytes))
	}
	if b.total+size > b.limit {
		return b.overError("expands to")
	}
	return nil
}

// countingReader fails once more than the budget's limit has been read through it.
type countingReader struct {
	ctx context.Context
	r   io.Reader
	b   *archiveBudget
	n   int64
}

var errArchiveBudget = errors.New("archive over budget")

func (c *countingReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.b.limit+1<<20 { // headers and padding on top of the entries
		return n, errArchiveBudget
	}
	return n, err
}

// safeEntryName vets an entry name as an extractor would and returns it cleaned; skip is
// true for the root directory itself ("./").
func safeEntryName(raw string) (name string, skip bool, err error) {
	n := strings.ReplaceAll(raw, `\`, "/")
	switch {
	case n == "" || strings.ContainsRune(n, 0):
		return "", false, convert.Errorf(nil, "archive entry %q has an invalid name", raw)
	case strings.HasPrefix(n, "/") || len(n) >= 2 && n[1] == ':' && (n[0]|0x20) >= 'a' && (n[0]|0x20) <= 'z':
		return "", false, convert.Errorf(nil, "archive entry %q has an absolute path, which would leave the archive's root", raw)
	}
	for _, elem := range strings.Split(n, "/") {
		if elem == ".." {
			return "", false, convert.Errorf(nil, "archive entry %q climbs out of the archive's root with \"..\"", raw)
		}
	}
	dir := strings.HasSuffix(n, "/")
	n = path.Clean(n)
	if n == "." {
		return "", true, nil
	}
	if dir {
		n += "/"
	}
	return n, false, nil
}

// permOf keeps permission bits, with sensible ones when an archive has none.
func permOf(m fs.FileMode, dir bool) fs.FileMode {
	p := m.Perm()
	if p == 0 {
		if dir {
			return 0o755
		}
		return 0o644
	}
	return p
}

func archiveRun(from, to string) func(context.Context, *io.SectionReader, io.Writer, convert.Params) error {
	return func(ctx context.Context, in *io.SectionReader, out io.Writer, p convert.Params) error {
		budget := newArchiveBudget(in.Size())
		defer budget.lost.report(p)
		next, closeR, err := openArchive(ctx, from, in, budget)
		if err != nil {
			return err
		}
		defer closeR()
		w, err := newArchiveWriter(ctx, to, out)
		if err != nil {
			return err
		}
		for done := int64(0); ; done++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			p.Progress(done, budget.stated)
			e, err := next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if err := w.add(e); err != nil {
				return archiveCopyError(ctx, from, e.name, budget, err)
			}
			budget.total += e.size
		}
		return w.close()
	}
}

// archiveCopyError explains a failure while an entry's data was copied.
func archiveCopyError(ctx context.Context, from, name string, b *archiveBudget, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ce *convert.Error
	switch {
	case errors.As(err, &ce):
		return err
	case errors.Is(err, errArchiveBudget):
		return b.overError("expands to")
	case errors.Is(err, zip.ErrChecksum):
		return convert.Errorf(err, "archive entry %q is damaged (its checksum does not match)", name)
	case errors.Is(err, zip.ErrFormat), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, tar.ErrWriteTooLong):
		return convert.Errorf(err, "archive entry %q is damaged or truncated (its data does not match its stated size)", name)
	}
	var fe flate.CorruptInputError
	if errors.As(err, &fe) {
		return convert.Errorf(err, "archive entry %q is damaged (its compressed data is corrupt)", name)
	}
	return convert.Errorf(err, "could not repack archive entry %q", name)
}

// openArchive returns a function yielding the entries of an archive in order.
func openArchive(ctx context.Context, from string, in *io.SectionReader, b *archiveBudget) (func() (*archiveEntry, error), func(), error) {
	head := make([]byte, convert.SniffLen)
	n, _ := in.ReadAt(head, 0)
	head = head[:n]
	nop := func() {}
	name := archiveName(from)
	if n == 0 {
		return nil, nop, convert.Errorf(nil, "input is not a valid %s file (it is empty)", name)
	}
	looks := func() error {
		_, what := convert.Sniff(head)
		if what == "unrecognised data" {
			return convert.Errorf(nil, "input is not a valid %s file (unrecognised data)", name)
		}
		return convert.Errorf(nil, "input is not a valid %s file (it looks like %s)", name, what)
	}
	switch from {
	case "zip":
		if id, _ := convert.Sniff(head); id != "zip" {
			return nil, nop, looks()
		}
		next, err := openZip(ctx, in, b)
		return next, nop, err
	case "tar":
		if !isTarHeader(head) && !(in.Size() >= 1024 && len(head) == 512 && bytes.Equal(head, make([]byte, 512))) { // or an empty tar
			return nil, nop, looks()
		}
		return tarEntries(ctx, &countingReader{ctx: ctx, r: bufio.NewReaderSize(io.NewSectionReader(in, 0, in.Size()), 64<<10), b: b}, b, "tar"), nop, nil
	case "tgz":
		if !bytes.HasPrefix(head, []byte{0x1f, 0x8b}) {
			return nil, nop, looks()
		}
		zr, err := gzip.NewReader(bufio.NewReaderSize(&convert.ContextReader{Ctx: ctx, R: io.NewSectionReader(in, 0, in.Size())}, 64<<10))
		if err != nil {
			return nil, nop, convert.Errorf(err, "input is not a valid tar.gz file (its gzip header is damaged)")
		}
		cr := &countingReader{ctx: ctx, r: zr, b: b}
		next, err := compressedTar(ctx, cr, b, "tar.gz", "gzip")
		return next, func() { zr.Close() }, err
	case "tzst":
		if !bytes.HasPrefix(head, []byte("\x28\xb5\x2f\xfd")) {
			return nil, nop, looks()
		}
		zr, err := zstd.NewReader(bufio.NewReaderSize(&convert.ContextReader{Ctx: ctx, R: io.NewSectionReader(in, 0, in.Size())}, 64<<10),
			zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(archiveMaxWindow), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, nop, convert.Errorf(err, "input is not a valid tar.zst file (%v)", err)
		}
		cr := &countingReader{ctx: ctx, r: zr, b: b}
		next, err := compressedTar(ctx, cr, b, "tar.zst", "Zstandard")
		return next, zr.Close, err
	}
	return nil, nop, convert.Errorf(convert.ErrUnsupported, "cannot read %s archives", from)
}

func archiveName(id string) string {
	for _, f := range archiveFormats {
		if f.id == id {
			return f.name
		}
	}
	return id
}

// compressedTar checks that a decompressed stream starts with a tar header.
func compressedTar(ctx context.Context, r io.Reader, b *archiveBudget, name, codec string) (func() (*archiveEntry, error), error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(512)
	if err != nil && len(head) == 0 {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, errArchiveBudget) {
			return nil, b.overError("expands to")
		}
		return nil, convert.Errorf(err, "input is not a valid %s file (its %s data is damaged or empty)", name, codec)
	}
	if !isTarHeader(head) && !bytes.Equal(head, make([]byte, len(head))) {
		if _, what := convert.Sniff(head); what != "unrecognised data" {
			return nil, convert.Errorf(nil, "input is a %s file, but what it holds is not a tar archive (it looks like %s)", codec, what)
		}
		return nil, convert.Errorf(nil, "input is a %s file, but what it holds is not a tar archive", codec)
	}
	return tarEntries(ctx, br, b, name), nil
}

// isTarHeader reports whether a block is a tar header: "ustar" magic, or an old-style
// header whose checksum is right.
func isTarHeader(h []byte) bool {
	if len(h) < 512 {
		return false
	}
	if string(h[257:262]) == "ustar" {
		return true
	}
	sum := 0
	for i, c := range h[:512] {
		if i >= 148 && i < 156 {
			c = ' '
		}
		sum += int(c)
	}
	field := strings.TrimRight(strings.TrimSpace(string(bytes.TrimRight(h[148:156], "\x00 "))), "\x00")
	want, err := strconv.ParseInt(field, 8, 64)
	return err == nil && int(want) == sum && h[0] != 0
}

// tarEntries reads tar entries, refusing links, devices and names that leave the root.
func tarEntries(ctx context.Context, r io.Reader, b *archiveBudget, name string) func() (*archiveEntry, error) {
	tr := tar.NewReader(r)
	return func() (*archiveEntry, error) {
		for {
			h, err := tr.Next()
			if err == io.EOF {
				return nil, io.EOF
			}
			if err != nil {
				switch {
				case ctx.Err() != nil:
					return nil, ctx.Err()
				case errors.Is(err, errArchiveBudget):
					return nil, b.overError("expands to")
				case errors.Is(err, io.ErrUnexpectedEOF):
					return nil, convert.Errorf(err, "input is not a valid %s file (it is truncated)", name)
				}
				var fe flate.CorruptInputError
				if errors.As(err, &fe) {
					return nil, convert.Errorf(err, "input is not a valid %s file (its compressed data is corrupt)", name)
				}
				return nil, convert.Errorf(err, "input is not a valid %s file (%v)", name, strings.TrimPrefix(err.Error(), "archive/tar: "))
			}
			switch h.Typeflag {
			case tar.TypeXGlobalHeader:
				continue
			case tar.TypeSymlink:
				return nil, convert.Errorf(nil, "archive entry %q is a symbolic link (to %q), which is not allowed", h.Name, h.Linkname)
			case tar.TypeLink:
				return nil, convert.Errorf(nil, "archive entry %q is a hard link (to %q), which is not allowed", h.Name, h.Linkname)
			case tar.TypeChar, tar.TypeBlock:
				return nil, convert.Errorf(nil, "archive entry %q is a device file, which is not allowed", h.Name)
			case tar.TypeFifo:
				return nil, convert.Errorf(nil, "archive entry %q is a FIFO, which is not allowed", h.Name)
			case tar.TypeReg, tar.TypeDir, tar.TypeGNUSparse:
			default:
				if h.Typeflag == tar.TypeRegA {
					break
				}
				return nil, convert.Errorf(nil, "archive entry %q has type %q, which is not supported (only files and directories)", h.Name, string(h.Typeflag))
			}
			n, skip, err := safeEntryName(h.Name)
			if err != nil {
				return nil, err
			}
			dir := h.Typeflag == tar.TypeDir
			if skip {
				if !dir {
					return nil, convert.Errorf(nil, "archive entry %q has an invalid name", h.Name)
				}
				continue
			}
			if dir && !strings.HasSuffix(n, "/") {
				n += "/"
			}
			size := h.Size
			if dir {
				size = 0
			}
			if err := b.admit(n, size); err != nil {
				return nil, err
			}
			b.lost.noteTar(n, h)
			return &archiveEntry{name: n, dir: dir, mode: permOf(fs.FileMode(h.Mode), dir), modTime: h.ModTime, size: size, body: tr}, nil
		}
	}
}

// openZip vets a zip's central directory: entry count, stated sizes against the budget, and
// entries whose data overlap (the trick of non-recursive zip bombs), before inflating anything.
func openZip(ctx context.Context, in *io.SectionReader, b *archiveBudget) (func() (*archiveEntry, error), error) {
	zr, err := zip.NewReader(in, in.Size())
	if err != nil {
		if errors.Is(err, zip.ErrInsecurePath) {
			// Go only reports this when GODEBUG zipinsecurepath=0; our own check names the entry.
		} else {
			return nil, convert.Errorf(err, "input is not a valid ZIP file (%v)", strings.TrimPrefix(err.Error(), "zip: "))
		}
	}
	if len(zr.File) > ArchiveMaxEntries {
		return nil, convert.Errorf(nil, "archive has %d entries, over the limit of %d", len(zr.File), ArchiveMaxEntries)
	}
	b.stated = int64(len(zr.File))
	if zr.Comment != "" {
		b.lost.comments++
	}
	var total uint64
	type span struct {
		start, end int64
		name       string
	}
	spans := make([]span, 0, len(zr.File))
	for _, f := range zr.File {
		total += f.UncompressedSize64
		if f.UncompressedSize64 > ArchiveMaxEntryBytes {
			return nil, convert.Errorf(nil, "archive entry %q is %s when unpacked, over the %s limit for one entry", f.Name, convert.ByteSize(int64(min(f.UncompressedSize64, 1<<62))), convert.ByteSize(ArchiveMaxEntryBytes))
		}
		if total > uint64(b.limit) {
			return nil, b.overError("states it expands to")
		}
		off, err := f.DataOffset()
		if err != nil {
			return nil, convert.Errorf(err, "input is not a valid ZIP file (entry %q has a damaged local header)", f.Name)
		}
		spans = append(spans, span{off, off + int64(f.CompressedSize64), f.Name})
	}
	slices.SortFunc(spans, func(a, c span) int { return int(min(max(a.start-c.start, -1), 1)) })
	for i := 1; i < len(spans); i++ {
		if spans[i].start < spans[i-1].end {
			return nil, convert.Errorf(nil, "archive entries %q and %q share their data, a trick of zip bombs; the archive is refused", spans[i-1].name, spans[i].name)
		}
	}
	zr.RegisterDecompressor(zip.Deflate, func(r io.Reader) io.ReadCloser { return flate.NewReader(r) })
	zr.RegisterDecompressor(zstdZipMethod, func(r io.Reader) io.ReadCloser {
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(archiveMaxWindow), zstd.WithDecoderLowmem(true))
		if err != nil {
			return io.NopCloser(errReader{err})
		}
		return d.IOReadCloser()
	})
	i := 0
	var open io.ReadCloser
	return func() (*archiveEntry, error) {
		if open != nil {
			open.Close()
			open = nil
		}
		for ; i < len(zr.File); i++ {
			f := zr.File[i]
			n, skip, err := safeEntryName(f.Name)
			if err != nil {
				return nil, err
			}
			mode := f.Mode()
			switch {
			case mode&fs.ModeSymlink != 0:
				return nil, convert.Errorf(nil, "archive entry %q is a symbolic link, which is not allowed", f.Name)
			case mode&(fs.ModeDevice|fs.ModeCharDevice) != 0:
				return nil, convert.Errorf(nil, "archive entry %q is a device file, which is not allowed", f.Name)
			case mode&fs.ModeNamedPipe != 0:
				return nil, convert.Errorf(nil, "archive entry %q is a FIFO, which is not allowed", f.Name)
			case mode&(fs.ModeSocket|fs.ModeIrregular) != 0:
				return nil, convert.Errorf(nil, "archive entry %q is not a regular file, which is not allowed", f.Name)
			case f.Flags&1 != 0:
				return nil, convert.Errorf(nil, "archive entry %q is encrypted, which is not supported", f.Name)
			}
			if skip {
				continue
			}
			dir := mode.IsDir() || strings.HasSuffix(n, "/")
			if dir && !strings.HasSuffix(n, "/") {
				n += "/"
			}
			size := int64(f.UncompressedSize64)
			if dir {
				size = 0
			}
			if err := b.admit(n, size); err != nil {
				return nil, err
			}
			if f.Comment != "" {
				b.lost.comments++
			}
			e := &archiveEntry{name: n, dir: dir, mode: permOf(mode, dir), modTime: f.Modified, size: size}
			if !dir {
				rc, err := f.Open()
				if err != nil {
					if errors.Is(err, zip.ErrAlgorithm) {
						return nil, convert.Errorf(err, "archive entry %q uses compression method %d, which is not supported (only stored, deflate and zstd)", f.Name, f.Method)
					}
					return nil, convert.Errorf(err, "archive entry %q is damaged (%v)", f.Name, err)
				}
				open = rc
				e.body = &countingReader{ctx: ctx, r: rc, b: b}
			}
			i++
			return e, nil
		}
		return nil, io.EOF
	}, nil
}

// zstdZipMethod is the zip compression method number of Zstandard.
const zstdZipMethod = 93

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// archiveWriter writes entries in order.
type archiveWriter interface {
	add(e *archiveEntry) error
	close() error
}

func newArchiveWriter(ctx context.Context, to string, out io.Writer) (archiveWriter, error) {
	w := &convert.ContextWriter{Ctx: ctx, W: out}
	switch to {
	case "zip":
		zw := zip.NewWriter(w)
		zw.RegisterCompressor(zip.Deflate, pooledDeflate)
		return &zipArchiveWriter{zw: zw}, nil
	case "tar":
		return &tarArchiveWriter{tw: tar.NewWriter(w)}, nil
	case "tgz":
		gz, err := gzip.NewWriterLevel(w, gzip.DefaultCompression)
		if err != nil {
			return nil, err
		}
		return &tarArchiveWriter{tw: tar.NewWriter(gz), outer: gz}, nil
	case "tzst":
		zw, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault))
		if err != nil {
			return nil, err
		}
		return &tarArchiveWriter{tw: tar.NewWriter(zw), outer: zw}, nil
	}
	return nil, convert.Errorf(convert.ErrUnsupported, "cannot write %s archives", to)
}

// deflaters reuses flate writers: each holds about a megabyte of tables, and a zip has one
// per entry.
var deflaters sync.Pool

// pooledDeflate is a zip compressor drawing its flate writer from deflaters.
func pooledDeflate(w io.Writer) (io.WriteCloser, error) {
	fw, _ := deflaters.Get().(*flate.Writer)
	if fw == nil {
		var err error
		if fw, err = flate.NewWriter(w, flate.DefaultCompression); err != nil {
			return nil, err
		}
	} else {
		fw.Reset(w)
	}
	return &pooledDeflater{fw}, nil
}

type pooledDeflater struct{ *flate.Writer }

func (p *pooledDeflater) Close() error {
	if p.Writer == nil {
		return nil
	}
	err := p.Writer.Close()
	deflaters.Put(p.Writer)
	p.Writer = nil
	return err
}

type zipArchiveWriter struct{ zw *zip.Writer }

func (z *zipArchiveWriter) add(e *archiveEntry) error {
	h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: e.modTime}
	if e.dir {
		h.Method = zip.Store
		h.SetMode(fs.ModeDir | e.mode)
	} else {
		h.SetMode(e.mode)
		h.UncompressedSize64 = uint64(e.size)
	}
	w, err := z.zw.CreateHeader(h)
	if err != nil {
		return err
	}
	if e.dir {
		return nil
	}
	return copyEntry(w, e)
}

func (z *zipArchiveWriter) close() error { return z.zw.Close() }

type tarArchiveWriter struct {
	tw    *tar.Writer
	outer io.WriteCloser
}

func (t *tarArchiveWriter) add(e *archiveEntry) error {
	h := &tar.Header{Name: e.name, Mode: int64(e.mode), ModTime: e.modTime.Truncate(time.Second), Typeflag: tar.TypeReg, Size: e.size}
	if e.dir {
		h.Typeflag = tar.TypeDir
	}
	if err := t.tw.WriteHeader(h); err != nil {
		return err
	}
	if e.dir {
		return nil
	}
	return copyEntry(t.tw, e)
}

func (t *tarArchiveWriter) close() error {
	if err := t.tw.Close(); err != nil {
		return err
	}
	if t.outer != nil {
		return t.outer.Close()
	}
	return nil
}

// copyEntry copies exactly an entry's stated size: a body that is shorter or longer is damaged.
func copyEntry(w io.Writer, e *archiveEntry) error {
	n, err := io.Copy(w, io.LimitReader(e.body, e.size))
	if err != nil {
		return err
	}
	if n != e.size {
		return fmt.Errorf("entry %q: %w", e.name, io.ErrUnexpectedEOF)
	}
	// Read on to the end: a longer body is damaged, and zip checks its CRC only at the end.
	var one [1]byte
	for range 3 {
		m, err := e.body.Read(one[:])
		switch {
		case m > 0:
			return fmt.Errorf("entry %q is longer than stated: %w", e.name, zip.ErrFormat)
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
	}
	return nil
}
