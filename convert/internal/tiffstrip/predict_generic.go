//go:build !amd64 || purego

package tiffstrip

// predictRGBFast has no assembly version here: predictRGB does it all in Go.
func predictRGBFast(dst, row []byte) int { return 0 }
