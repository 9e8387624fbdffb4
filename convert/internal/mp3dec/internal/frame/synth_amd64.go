//go:build !purego

package frame

// synthWindow is synthWindowGo with SSE (every amd64 has it): the same float32 multiplies and
// adds per lane, in the same order, four lanes at a time (convsvc change, issue 36: the
// window was a quarter of an MP3 -> WAV's CPU). off is masked to a multiple of 32 below 1024,
// so the reads stay inside vv whatever it is.
//
//go:noescape
func synthWindow(pcm *[32]float32, vv *[1024]float32, off int)
