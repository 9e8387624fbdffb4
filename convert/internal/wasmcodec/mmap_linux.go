package wasmcodec

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryAllocator backs each instance's linear memory with its own anonymous mapping, reserved
// at the memory's maximum size and committed by the kernel page by page as the codec touches it.
// wazero's default grows a Go slice by appending, which copies the whole memory at each growth
// (the AV1 encoder's peak is about twice its working set then) and leaves the freed slices to
// the garbage collector and the scavenger; a mapping never moves and goes back to the system the
// moment the instance is closed.
var memoryAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(mmapMemory)

// mmapLinearMemory is one instance's mapping.
type mmapLinearMemory struct {
	buf []byte // the whole reservation
}

func mmapMemory(_, max uint64) experimental.LinearMemory {
	if max == 0 || max > 1<<32 {
		max = 1 << 32
	}
	buf, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return failedMemory{}
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

// failedMemory is a reservation the system refused: every allocation fails, which the codec
// reports as running out of memory.
type failedMemory struct{}

func (failedMemory) Reallocate(uint64) []byte { return nil }
func (failedMemory) Free()                    {}
