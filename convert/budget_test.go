package convert

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/bytesize"
)

import ()

import ()

func TestDefaultConversionMemory(t *testing.T) {
	got := DefaultConversionMemory()
	if got <= 0 {
		t.Fatalf("DefaultConversionMemory() = %d", got)
	}
	if total := memTotal(); total > 0 && got > total/2 {
		t.Errorf("DefaultConversionMemory() = %d, over half of MemTotal %d", got, total)
	}
	t.Logf("default conversion memory budget: %s", bytesize.Format(got))
	if l := (Limits{}).Normalized(); l.MaxConversionMemory != got {
		t.Errorf("normalized MaxConversionMemory = %d, want %d", l.MaxConversionMemory, got)
	}
}

func TestMemBudget_FIFO(t *testing.T) {
	b := newMemBudget(10)
	ctx := context.Background()
	if err := b.acquire(ctx, 6, "a"); err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 2)
	var wg sync.WaitGroup
	start := func(name string, n int64) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.acquire(ctx, n, name); err != nil {
				t.Error(err)
				return
			}
			order <- name
		}()
	}
	start("big", 8)
	waitFor(t, "one waiter", func() bool { return waiters(b) == 1 })
	// Fits beside "a", but "big" is queued first and must not be overtaken.
	start("small", 3)
	waitFor(t, "two waiters", func() bool { return waiters(b) == 2 })
	b.release(6)
	if got := <-order; got != "big" {
		t.Fatalf("%s was served first, want big", got)
	}
	if waiters(b) != 1 {
		t.Fatalf("small does not fit beside big, yet %d waiters remain", waiters(b))
	}
	b.release(8)
	if got := <-order; got != "small" {
		t.Fatalf("%s was served second", got)
	}
	wg.Wait()
	if b.inUse() != 3 {
		t.Errorf("in use %d, want 3", b.inUse())
	}
}

func TestMemBudget_Cancel(t *testing.T) {
	b := newMemBudget(10)
	if err := b.acquire(context.Background(), 10, "a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- b.acquire(ctx, 5, "b") }()
	waitFor(t, "one waiter", func() bool { return waiters(b) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if waiters(b) != 0 {
		t.Error("a cancelled waiter stayed queued")
	}
	b.release(10)
	if b.inUse() != 0 {
		t.Errorf("in use %d after every release", b.inUse())
	}
}

func TestMemBudget_TooLarge(t *testing.T) {
	b := newMemBudget(1 << 20)
	err := b.acquire(context.Background(), 3<<30, "converting this")
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *Error", err)
	}
	if want := "converting this needs an estimated 3.0 GiB of memory, over the 1.0 MiB conversion memory budget (--max-conversion-memory); use a smaller input"; ce.Message != want {
		t.Errorf("Message = %q\nwant      %q", ce.Message, want)
	}
}

func waiters(b *memBudget) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters.Len()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestEmbeddedMemory_Reserve: an embedded resource's reservation fails at once over the whole
// budget, never waits (it may overdraw), holds back direct conversions until it is given
// back, and gives back once however often release is called.
func TestEmbeddedMemory_Reserve(t *testing.T) {
	b := newMemBudget(100)
	m := EmbeddedMemory{b}
	if _, err := m.Reserve(101, "decoding this image"); err == nil {
		t.Fatal("Reserve over the whole budget succeeded")
	} else if ce := (*Error)(nil); !errors.As(err, &ce) {
		t.Fatalf("err = %T %v, want *Error", err, err)
	}
	if err := b.acquire(context.Background(), 80, "conversion"); err != nil {
		t.Fatal(err)
	}
	release, err := m.Reserve(60, "decoding this image") // overdraws: 140 of 100, without waiting
	if err != nil {
		t.Fatal(err)
	}
	if got := b.inUse(); got != 140 {
		t.Fatalf("in use = %d, want 140", got)
	}
	b.release(80)
	granted := make(chan error, 1)
	go func() { granted <- b.acquire(context.Background(), 50, "next conversion") }()
	select {
	case err := <-granted:
		t.Fatalf("a conversion got 50 while the embedded image held 60 of 100: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	release() // a second call does nothing
	select {
	case err := <-granted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting conversion was not granted after the release")
	}
	if got := b.inUse(); got != 50 {
		t.Errorf("in use = %d, want 50", got)
	}
	if r, err := (EmbeddedMemory{}).Reserve(1<<40, "x"); err != nil || r == nil {
		t.Errorf("zero EmbeddedMemory: %v", err)
	}
}

// catalogBroker holds a catalog's budget for another catalog, as the server does for a
// worker process's catalog (package worker does it over a socket).
type catalogBroker struct{ c *Catalog }

func (b catalogBroker) Acquire(ctx context.Context, n int64, what string) error {
	return b.c.AcquireMemory(ctx, n, what)
}
func (b catalogBroker) Reserve(n int64, what string) error { return b.c.ReserveMemory(n, what) }
func (b catalogBroker) Release(n int64)                    { b.c.ReleaseMemory(n) }

// TestCatalog_SetMemoryBroker: with a broker, a catalog's reservations (direct and embedded)
// are the broker's: they wait on its budget and come back to it; a request over the whole
// budget is refused without asking.
func TestCatalog_SetMemoryBroker(t *testing.T) {
	lim := Limits{MaxConversionMemory: 100 << 20}
	server := NewEmptyCatalog(lim)
	worker1, worker2 := NewEmptyCatalog(lim), NewEmptyCatalog(lim)
	worker1.SetMemoryBroker(catalogBroker{server})
	worker2.SetMemoryBroker(catalogBroker{server})

	if err := worker1.AcquireMemory(context.Background(), 60<<20, "first"); err != nil {
		t.Fatal(err)
	}
	if held, _ := server.MemoryUse(); held != 60<<20 {
		t.Fatalf("server holds %d, want 60 MiB", held)
	}
	granted := make(chan error, 1)
	go func() { granted <- worker2.AcquireMemory(context.Background(), 60<<20, "second") }()
	for {
		if _, waiting := server.MemoryUse(); waiting == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	worker1.ReleaseMemory(60 << 20)
	if err := <-granted; err != nil {
		t.Fatal(err)
	}
	release, err := EmbeddedMemory{worker2.budget}.Reserve(50<<20, "an embedded image")
	if err != nil {
		t.Fatal(err)
	}
	if held, _ := server.MemoryUse(); held != 110<<20 {
		t.Fatalf("server holds %d, want 110 MiB (the embedded reservation overdraws)", held)
	}
	release()
	worker2.ReleaseMemory(60 << 20)
	if held, waiting := server.MemoryUse(); held != 0 || waiting != 0 {
		t.Fatalf("server holds %d with %d waiting, want none", held, waiting)
	}
	var ce *Error
	if err := worker1.AcquireMemory(context.Background(), 200<<20, "too much"); !errors.As(err, &ce) {
		t.Fatalf("200 MiB of 100: %v", err)
	}
	if err := server.ReserveMemory(200<<20, "too much"); !errors.As(err, &ce) {
		t.Fatalf("ReserveMemory 200 MiB of 100: %v", err)
	}
}
