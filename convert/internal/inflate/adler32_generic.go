//go:build !amd64 || purego

package inflate

// hasAVX2 says there is no assembly Adler-32 here.
const hasAVX2 = false

func adler32AVX2(s1, s2 uint32, p []byte) (uint32, uint32) { panic("unreachable") }
