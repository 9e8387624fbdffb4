// Package mp3dec is github.com/hajimehoshi/go-mp3 v0.3.4 (Apache License 2.0, copyright
// Hajime Hoshi; see LICENSE in this directory), copied so convsvc can change its hot spots
// (issue 21): requantisation's 2^(k/4) gains come from a table once per scale factor band
// instead of math.Pow per sample; Huffman code words (with their sign bits) are decoded by table
// lookup; the IMDCT is an 18/6-point DCT-IV unfolded by symmetry, skipping zero inputs; subband
// synthesis is a 32-point DCT-II by Lee's factorisation with the V history in a ring buffer, its
// window four lanes at a time in SSE on amd64 (the same float32 operations in the same order as
// the Go form, which other architectures and the purego tag use); and
// frames, main data and the PCM buffer are reused rather than allocated per frame. Every change
// is marked "convsvc change". The PCM is no longer the module's byte for byte (float sums in
// another order): it is tested and fuzzed against the module within 4 LSB and 90 dB PSNR.
package mp3dec
