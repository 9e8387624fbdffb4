package wasmcodec

import (
	"errors"
	"strings"
)

// stripDebug returns the WebAssembly binary bin without its DWARF custom sections (names
// beginning ".debug_"), which the AVIF module carries: with them wazero builds a source map
// entry for every call site and writes it to the compilation cache, where reading it back
// costs one read system call per entry (268,000 of them, 0.2 s, in every process that loads
// the cached AVIF codec). Without them the cached code loads in a few large reads. The other
// sections are copied unchanged, so the code run is the same; the cache key (a hash of the
// binary) changes with the bytes, so an entry made from the unstripped module is never read.
func stripDebug(bin []byte) ([]byte, error) {
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" {
		return nil, errors.New("not a WebAssembly binary")
	}
	out := make([]byte, 0, len(bin))
	out = append(out, bin[:8]...)
	for p := 8; p < len(bin); {
		start := p
		id := bin[p]
		size, n := uleb32(bin[p+1:])
		if n == 0 || uint64(p+1+n)+uint64(size) > uint64(len(bin)) {
			return nil, errors.New("malformed WebAssembly section header")
		}
		body := bin[p+1+n : p+1+n+int(size)]
		p += 1 + n + int(size)
		if id == 0 {
			nameLen, m := uleb32(body)
			if m == 0 || uint64(m)+uint64(nameLen) > uint64(len(body)) {
				return nil, errors.New("malformed WebAssembly custom section name")
			}
			if strings.HasPrefix(string(body[m:m+int(nameLen)]), ".debug_") {
				continue
			}
		}
		out = append(out, bin[start:p]...)
	}
	return out, nil
}

// uleb32 decodes an unsigned LEB128 number of at most 32 bits at the start of b, returning
// it and its length in bytes, or a length of 0 when b does not start with one.
func uleb32(b []byte) (uint32, int) {
	var v uint32
	for i := 0; i < 5 && i < len(b); i++ {
		v |= uint32(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			if i == 4 && b[i] > 0x0f {
				return 0, 0
			}
			return v, i + 1
		}
	}
	return 0, 0
}
