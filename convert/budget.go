package convert

import (
	"bufio"
	"bytes"
	"container/list"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/convsvc/convsvc/internal/bytesize"
)

// fallbackConversionMemory is the budget when the machine's memory cannot be read.
const fallbackConversionMemory = 2 << 30

// DefaultConversionMemory returns the default Limits.MaxConversionMemory: half of the memory
// this process may use, that is the smaller of the machine's RAM (MemTotal in /proc/meminfo)
// and the cgroup's memory limit (cgroup v2 memory.max or v1 memory.limit_in_bytes), or 1 GiB
// when neither can be read (other systems than Linux).
func DefaultConversionMemory() int64 {
	total := memTotal()
	if lim := cgroupMemoryLimit(); lim > 0 && (total <= 0 || lim < total) {
		total = lim
	}
	if total <= 0 {
		return fallbackConversionMemory / 2
	}
	return total / 2
}

// defaultConversionMemory is DefaultConversionMemory, read once per process.
var defaultConversionMemory = sync.OnceValue(DefaultConversionMemory)

// memTotal reads MemTotal from /proc/meminfo, in bytes; 0 when it cannot.
func memTotal() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// "MemTotal:       24731708 kB"
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil || kb <= 0 {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// cgroupMemoryLimit returns the memory limit of the process's cgroup in bytes, or 0 when there
// is none or it cannot be read. Inside a container the cgroup root is the container's own.
func cgroupMemoryLimit() int64 {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(data))
		if s == "max" {
			return 0
		}
		v, err := strconv.ParseInt(s, 10, 64)
		// cgroup v1 reports "no limit" as a page-rounded MaxInt64.
		if err != nil || v <= 0 || v >= 1<<62 {
			return 0
		}
		return v
	}
	return 0
}

// memBudget is a weighted semaphore over bytes of estimated conversion memory. Waiters are
// served first come, first served: a large request at the head of the queue holds back smaller
// ones behind it, so it cannot be starved by a stream of small conversions.
type memBudget struct {
	size int64
	// broker, when set, holds the budget elsewhere (a worker process reserving from the
	// server's budget): acquire and Reserve ask it, and cur only counts what it granted here.
	broker MemoryBroker

	mu      sync.Mutex
	cur     int64
	waiters list.List // of *budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed when the bytes are granted
}

// overBudget is the error for a reservation of n bytes that the whole budget of size could
// not hold: what needs it (an image, a document's fonts, ...) and that a smaller input would do.
func overBudget(what string, n, size int64) *Error {
	return Errorf(nil, "%s needs an estimated %s of memory, over the %s conversion memory budget (--max-conversion-memory); use a smaller input",
		what, bytesize.Format(n), bytesize.Format(size))
}

func newMemBudget(size int64) *memBudget {
	return &memBudget{size: size}
}

// acquire reserves n bytes, waiting while other conversions hold too much of the budget. It
// fails at once with an *Error when n alone exceeds the whole budget, and with ctx's error
// when ctx ends first.
func (b *memBudget) acquire(ctx context.Context, n int64, what string) error {
	if n > b.size {
		return overBudget(what, n, b.size)
	}
	if b.broker != nil {
		if err := b.broker.Acquire(ctx, n, what); err != nil {
			return err
		}
		b.mu.Lock()
		b.cur += n
		b.mu.Unlock()
		return nil
	}
	b.mu.Lock()
	if b.size-b.cur >= n && b.waiters.Len() == 0 {
		b.cur += n
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	elem := b.waiters.PushBack(w)
	b.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		select {
		case <-w.ready:
			// Granted while we were giving up: hand the bytes back.
			b.cur -= n
			b.notifyLocked()
		default:
			isFront := b.waiters.Front() == elem
			b.waiters.Remove(elem)
			if isFront {
				// Waiters behind us may fit now.
				b.notifyLocked()
			}
		}
		b.mu.Unlock()
		return ctx.Err()
	}
}

// release returns n bytes to the budget.
func (b *memBudget) release(n int64) {
	b.mu.Lock()
	b.cur -= n
	if b.cur < 0 {
		b.mu.Unlock()
		panic("convert: memBudget released more than acquired")
	}
	b.notifyLocked()
	b.mu.Unlock()
	if b.broker != nil {
		b.broker.Release(n)
	}
}

// MemoryBroker holds a conversion memory budget outside the catalog. A worker process's
// catalog (package worker) reserves through one from the server's budget, so that the
// conversions of every worker process share one --max-conversion-memory.
type MemoryBroker interface {
	// Acquire reserves n bytes, waiting while others hold too much; it fails with an *Error
	// when the budget refuses n, and with ctx's error when ctx ends first.
	Acquire(ctx context.Context, n int64, what string) error
	// Reserve reserves n bytes without waiting (it may take the budget past its size for the
	// moment), as EmbeddedMemory.Reserve does.
	Reserve(n int64, what string) error
	// Release returns n bytes that Acquire or Reserve granted.
	Release(n int64)
}

// SetMemoryBroker makes the catalog's conversions reserve their memory through mb instead of
// the catalog's own budget (requests over the whole budget are still refused here first). Call
// it before the first conversion.
func (c *Catalog) SetMemoryBroker(mb MemoryBroker) { c.budget.broker = mb }

// ReserveMemory reserves n bytes of the catalog's budget without waiting, as
// EmbeddedMemory.Reserve does: it fails only when n alone exceeds the whole budget, and it may
// take the budget past its size for the moment. Pair it with ReleaseMemory(n). The server
// grants a worker process's embedded reservations with it.
func (c *Catalog) ReserveMemory(n int64, what string) error {
	if n > c.budget.size {
		return overBudget(what, n, c.budget.size)
	}
	c.budget.mu.Lock()
	c.budget.cur += n
	c.budget.mu.Unlock()
	return nil
}

// notifyLocked grants waiters in order while they fit.
func (b *memBudget) notifyLocked() {
	for {
		front := b.waiters.Front()
		if front == nil {
			return
		}
		w := front.Value.(*budgetWaiter)
		if b.size-b.cur < w.n {
			return
		}
		b.cur += w.n
		b.waiters.Remove(front)
		close(w.ready)
	}
}

// inUse returns the bytes currently reserved.
func (b *memBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur
}

// EmbeddedMemory is the catalog's conversion memory budget as a converter sees it for the
// resources embedded in its input (a data: URI image in Markdown, HTML or a document), so
// that every decode goes through the same budget as a direct conversion.
type EmbeddedMemory struct{ b *memBudget }

// Reserve reserves n bytes for decoding one embedded resource described by what, and returns
// the function that gives them back. Like a direct conversion, it fails at once with an *Error
// when n alone exceeds the whole budget (--max-conversion-memory). Unlike one it never waits:
// the conversion already holds its share, and waiting for a second share while holding the
// first could deadlock two conversions. It may take the budget past its size for the moment;
// other conversions then wait until it is given back. The zero EmbeddedMemory (a converter
// run outside a catalog) reserves nothing.
func (m EmbeddedMemory) Reserve(n int64, what string) (release func(), err error) {
	if m.b == nil {
		return func() {}, nil
	}
	if n > m.b.size {
		return nil, overBudget(what, n, m.b.size)
	}
	if m.b.broker != nil {
		if err := m.b.broker.Reserve(n, what); err != nil {
			return nil, err
		}
	}
	m.b.mu.Lock()
	m.b.cur += n
	m.b.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { m.b.release(n) }) }, nil
}
