//go:build !amd64 || purego

package frame

// synthWindow is synthWindowGo where there is no assembly version.
func synthWindow(pcm *[32]float32, vv *[1024]float32, off int) { synthWindowGo(pcm, vv, off) }
