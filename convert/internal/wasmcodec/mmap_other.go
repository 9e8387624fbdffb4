//go:build !linux

package wasmcodec

import "github.com/tetratelabs/wazero/experimental"

// memoryAllocator is wazero's default (a growing Go slice) where no mapping is implemented.
var memoryAllocator experimental.MemoryAllocator
