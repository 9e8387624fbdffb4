package blobstore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"os"
	"sync"
)

// A blob streams through chunks: each full chunk is written to the file by the
// goroutine that filled it and then hashed by a second goroutine while the
// next one fills. This is a fast path for measured speed: SHA-256 was 58% of a
// PUT's CPU when it ran in the copy loop between socket read and file write
// (docs/benchmarks.md, section 5); overlapping it with reading and writing on
// the second core, with early writeback (startWriteback), took a 1 GiB PUT
// from 0.59-0.65 to 0.73-0.98 of the fsync'ing bare handler in the same
// blobbench runs (load 4.5-5.7 on 2 cores). io.MultiWriter and io.Pipe hash
// in the writer's goroutine, so no maintained piece does this.
const (
	// chunkSize is one file write and one hash step. 256 KiB x 8 matched
	// 1 MiB x 4 on a 1 GiB blobbench PUT (medians 695 and 686 MB/s, same runs)
	// and was 4-20% faster on the 64 MiB BenchmarkPutUpload, with half the memory.
	chunkSize = 256 << 10
	// chunkCount bounds the chunks one blob holds at once: memory per streaming
	// upload or output is at most chunkCount*chunkSize (2 MiB); a blob that
	// fits in one chunk uses one and never starts the hashing goroutine.
	chunkCount = 8
	// writebackEvery is how far the written bytes run ahead of the last
	// writeback request before the next one (see startWriteback).
	writebackEvery = 8 << 20
)

// chunkPool holds *[]byte of chunkSize, shared by every store in the process.
var chunkPool = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

// chunk is a pooled buffer and how many of its bytes are data.
type chunk struct {
	buf *[]byte
	n   int
}

// tempBlob is a file being written under tmp/ that counts and hashes what it
// is given; discard removes it unless it was renamed into place (kept). It is
// an io.Writer and an io.ReaderFrom; neither may be called after finish.
type tempBlob struct {
	f    *os.File
	hash hash.Hash
	n    int64 // bytes accepted (written or buffered)
	err  error // first error writing the file: the disk, not the producer, failed
	kept bool

	cur    chunk // being filled; cur.buf nil when none is held
	taken  int   // chunks taken from chunkPool
	full   chan chunk
	free   chan chunk
	done   chan struct{} // closed when the hashing goroutine returns
	ended  bool          // the hashing goroutine was told to stop, or never started
	ondisk int64         // bytes written to f
	wbDone int64         // writeback requested up to this offset
	// external: another writer fills f through its descriptor (PendingOutput.File); adopt
	// then takes what f holds.
	external bool
}

// createTemp starts a temp blob named after prefix.
func (s *Store) createTemp(prefix string) (*tempBlob, error) {
	f, err := os.CreateTemp(s.tmp, prefix+"-*")
	if err != nil {
		return nil, err
	}
	return &tempBlob{f: f, hash: sha256.New()}, nil
}

// Write buffers p, writing and hashing each chunk as it fills.
func (t *tempBlob) Write(p []byte) (int, error) { return write(t, p) }

// WriteString is Write without converting s to a []byte first.
func (t *tempBlob) WriteString(s string) (int, error) { return write(t, s) }

// WriteByte writes one byte, for producers that emit bytes one at a time.
func (t *tempBlob) WriteByte(b byte) error {
	if t.err != nil {
		return t.err
	}
	if t.cur.buf == nil {
		t.cur = t.take()
	}
	(*t.cur.buf)[t.cur.n] = b
	t.cur.n++
	t.n++
	if t.cur.n == chunkSize {
		t.ship(false)
	}
	return t.err
}

func write[S string | []byte](t *tempBlob, p S) (int, error) {
	written := 0
	for len(p) > 0 {
		if t.err != nil {
			return written, t.err
		}
		if t.cur.buf == nil {
			t.cur = t.take()
		}
		m := copy((*t.cur.buf)[t.cur.n:], p)
		t.cur.n += m
		t.n += int64(m)
		written += m
		p = p[m:]
		if t.cur.n == chunkSize {
			t.ship(false)
		}
	}
	return written, t.err
}

// ReadFrom reads r to EOF straight into chunks, so the bytes are copied once,
// from the socket into the chunk; it returns r's error, or the disk's.
func (t *tempBlob) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for t.err == nil {
		if t.cur.buf == nil {
			t.cur = t.take()
		}
		m, err := r.Read((*t.cur.buf)[t.cur.n:])
		t.cur.n += m
		t.n += int64(m)
		total += int64(m)
		if t.cur.n == chunkSize {
			t.ship(false)
		}
		if err == io.EOF {
			return total, t.err
		} else if err != nil {
			return total, err
		}
	}
	return total, t.err
}

// take returns an empty chunk: a new one from the pool while fewer than
// chunkCount are held, else the next one the hashing goroutine is done with.
func (t *tempBlob) take() chunk {
	if t.taken < chunkCount {
		t.taken++
		return chunk{buf: chunkPool.Get().(*[]byte)}
	}
	c := <-t.free
	c.n = 0
	return c
}

// ship writes the current chunk to the file and hands it to the hashing
// goroutine (started on the first full chunk); last says no more data
// follows, and then a blob that never filled a chunk hashes in place.
func (t *tempBlob) ship(last bool) {
	c := t.cur
	t.cur = chunk{}
	if c.n > 0 && t.err == nil {
		if _, err := t.f.Write((*c.buf)[:c.n]); err != nil {
			t.err = err
		} else {
			t.ondisk += int64(c.n)
			if t.ondisk-t.wbDone >= writebackEvery {
				startWriteback(t.f, t.wbDone, t.ondisk-t.wbDone)
				t.wbDone = t.ondisk
			}
		}
	}
	if t.full == nil && !last && !t.ended {
		t.full = make(chan chunk, chunkCount)
		t.free = make(chan chunk, chunkCount)
		t.done = make(chan struct{})
		go t.hashLoop(t.full, t.free, t.done)
	}
	if t.full != nil && !t.ended {
		t.full <- c
		return
	}
	t.hash.Write((*c.buf)[:c.n])
	chunkPool.Put(c.buf)
	t.taken--
}

// hashLoop hashes chunks in the order they were written and hands them back.
func (t *tempBlob) hashLoop(full <-chan chunk, free chan<- chunk, done chan<- struct{}) {
	defer close(done)
	for c := range full {
		t.hash.Write((*c.buf)[:c.n])
		free <- c
	}
}

// stop waits for the hashing goroutine to finish what it was given and
// returns every chunk to the pool. It is safe to call more than once.
func (t *tempBlob) stop() {
	if t.full != nil && !t.ended {
		close(t.full)
		<-t.done
		close(t.free)
		for c := range t.free {
			chunkPool.Put(c.buf)
		}
	}
	t.ended = true
	if t.cur.buf != nil {
		chunkPool.Put(t.cur.buf)
		t.cur = chunk{}
	}
}

// finish writes what is buffered, completes the hash (the hashing goroutine is at most
// chunkCount chunks behind the writes, while the writeback of the last bytes starts), keeps
// it in the file's uploadAttr when attr is set and the filesystem takes it, makes the file
// durable with one fsync, which covers the data and the attribute, and closes it.
func (t *tempBlob) finish(attr bool) error {
	t.flush()
	if t.err == nil && t.ondisk > t.wbDone {
		startWriteback(t.f, t.wbDone, t.ondisk-t.wbDone)
		t.wbDone = t.ondisk
	}
	t.stop()
	err := t.err
	if err == nil && attr {
		if aerr := setAttr(t.f, uploadAttr, []byte(t.sum())); aerr != nil && !errors.Is(aerr, errNoMetaAttr) {
			err = aerr
		}
	}
	if err == nil {
		err = t.f.Sync()
	}
	return errors.Join(err, t.f.Close())
}

// complete writes what is buffered and completes the hash, leaving the file open and not
// yet durable: for a caller that adds to the file what depends on the hash, then calls
// syncClose.
func (t *tempBlob) complete() error {
	t.flush()
	t.stop()
	return t.err
}

// flush writes the chunk being filled, the last one.
func (t *tempBlob) flush() {
	if t.cur.buf != nil {
		t.ship(true)
	}
}

// adopt takes what another writer put into the file (external) as the blob: its size, and
// its hash by reading it back, with the file's writeback started first so that the fsync
// which follows finds little left to write. The file stays open and not yet durable, as after
// complete.
func (t *tempBlob) adopt() error {
	fi, err := t.f.Stat()
	if err != nil {
		return err
	}
	t.n, t.ondisk = fi.Size(), fi.Size()
	startWriteback(t.f, 0, t.n)
	buf := chunkPool.Get().(*[]byte)
	defer chunkPool.Put(buf)
	_, err = io.CopyBuffer(t.hash, io.NewSectionReader(t.f, 0, t.n), *buf)
	return err
}

// syncClose makes the file durable and closes it, after complete.
func (t *tempBlob) syncClose() error { return errors.Join(t.f.Sync(), t.f.Close()) }

// sum is the hex SHA-256 of what was written; call it after finish or complete.
func (t *tempBlob) sum() string { return hex.EncodeToString(t.hash.Sum(nil)) }

// discard stops the hashing, releases the chunks and removes the file unless
// it was kept.
func (t *tempBlob) discard() {
	t.stop()
	if !t.kept {
		t.f.Close()
		os.Remove(t.f.Name())
	}
}
