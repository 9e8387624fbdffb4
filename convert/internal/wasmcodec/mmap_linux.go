package wasmcodec

import (
	"strconv"
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryAllocator backs each instance's linear memory with its own anonymous mapping, reserved
// at the memory's maximum size and committed by the kernel page by page as the codec touches it.
// wazero's default grows a Go slice by appending, which copies the whole memory at each growth
// (the AV1 encoder's peak is about twice its working set then) and leaves the freed slices to
// the garbage collector and the scavenger; a mapping never moves and goes back to the system the
// moment the instance is closed.
// 32-bit systems cannot reserve 4 GiB and keep wazero's default.
var memoryAllocator = func() experimental.MemoryAllocator {
	if strconv.IntSize < 64 {
		return nil
	}
	return experimental.MemoryAllocatorFunc(mmapMemory)
}()

// mmapLinearMemory is one instance's mapping.
type mmapLinearMemory struct {
	buf []byte // the whole reservation
}

func mmapMemory(capHint, max uint64) experimental.LinearMemory {
	if max == 0 || max > 1<<32 {
		max = 1 << 32
	}
	buf, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		// A system that refuses the reservation (vm.overcommit_memory=2 ignores
		// MAP_NORESERVE): grow a Go slice, as wazero's default does.
		return &sliceMemory{buf: make([]byte, 0, min(capHint, max)), max: max}
	}
	return &mmapLinearMemory{buf: buf}
}

// Reallocate returns the first size bytes of the reservation: growing never moves or copies.
func (m *mmapLinearMemory) Reallocate(size uint64) []byte {
	if m.buf == nil || size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size:size]
}

// Free unmaps the memory.
func (m *mmapLinearMemory) Free() {
	if m.buf != nil {
		syscall.Munmap(m.buf)
		m.buf = nil
	}
}

// sliceMemory is a linear memory on the Go heap that grows by copying.
type sliceMemory struct {
	buf []byte
	max uint64
}

// Reallocate grows the slice to size bytes, moving it when its capacity is short.
func (m *sliceMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if n := int(size); n <= cap(m.buf) {
		m.buf = m.buf[:n]
	} else {
		m.buf = append(m.buf[:cap(m.buf)], make([]byte, n-cap(m.buf))...)
	}
	return m.buf
}

// Free drops the slice for the collector.
func (m *sliceMemory) Free() { m.buf = nil }
