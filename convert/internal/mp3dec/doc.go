// Package mp3dec is github.com/hajimehoshi/go-mp3 v0.3.4 (Apache License 2.0, copyright
// Hajime Hoshi; see LICENSE in this directory), copied so convsvc can change its hot spots:
// requantisation's 2^(k/4) gains come from a table instead of math.Pow (bit-identical, since
// the exponents are quarter steps), and subband synthesis reuses its scratch vectors. Every
// change is marked "convsvc change". Its output is tested sample for sample against the module.
package mp3dec
