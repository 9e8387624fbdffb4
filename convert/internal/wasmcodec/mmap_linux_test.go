package wasmcodec

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero/experimental"
)

// The Go-slice fallback (for systems that refuse the reservation) keeps the memory's contents
// as it grows, refuses to grow past the maximum, and encodes the same AVIF as the mapping.
func TestSliceMemory(t *testing.T) {
	m := &sliceMemory{buf: make([]byte, 0, 16), max: 1 << 20}
	b := m.Reallocate(8)
	copy(b, "abcdefgh")
	b = m.Reallocate(1 << 16)
	if len(b) != 1<<16 || string(b[:8]) != "abcdefgh" || b[1<<16-1] != 0 {
		t.Fatalf("grown memory: %d bytes starting %q", len(b), b[:8])
	}
	if m.Reallocate(1<<20+1) != nil {
		t.Error("grew past the maximum")
	}

	img := sampleRGBA(t)
	opts := AVIFOptions{Quality: 60, QualityAlpha: 60, Speed: 10, Chroma: AVIFYUV420}
	var mapped, sliced bytes.Buffer
	if err := EncodeAVIF(context.Background(), &mapped, img, opts); err != nil {
		t.Fatal(err)
	}
	saved := memoryAllocator
	memoryAllocator = experimental.MemoryAllocatorFunc(func(capHint, max uint64) experimental.LinearMemory {
		return &sliceMemory{buf: make([]byte, 0, capHint), max: max}
	})
	defer func() { memoryAllocator = saved }()
	if err := EncodeAVIF(context.Background(), &sliced, img, opts); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mapped.Bytes(), sliced.Bytes()) {
		t.Error("the slice-backed memory encoded different bytes")
	}
}
