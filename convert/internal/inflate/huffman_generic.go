//go:build !amd64 || purego

package inflate

// hasHuffmanFast says there is no assembly huffman loop here.
const hasHuffmanFast = false

func huffmanFast(in *[unitSize]byte, out *[outSize]byte, lit, dist *uint32, bb uint64, nb uint, pos, end, w int) (uint64, uint, int, int) {
	panic("unreachable")
}
