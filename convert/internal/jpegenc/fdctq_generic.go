//go:build !amd64 || purego

package jpegenc

// hasAVX2 says there is no assembly version of fdctQuantize here.
const hasAVX2 = false

// fdctQuantize is fdctQuantizeGo: there is no assembly version here.
func fdctQuantize(b *block, qt *quantTable, zz *[blockSize]int32) uint64 {
	return fdctQuantizeGo(b, qt, zz)
}

// prepareSIMD has nothing to prepare without the assembly.
func (qt *quantTable) prepareSIMD() {}

func fdctQuantizeAVX2(b *block, qt *quantTable, zz *[blockSize]int32) uint64 {
	panic("unreachable")
}
