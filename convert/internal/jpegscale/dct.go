package jpegscale

import "github.com/convsvc/convsvc/convert/internal/jpegdct"

// block is image/jpeg's 8x8 block of coefficients; the DCT is jpegdct's (image/jpeg's dct.go,
// shared with jpegenc), so scale 1 decodes image/jpeg's pixels exactly.
type block = jpegdct.Block

const blockSize = jpegdct.BlockSize

// idct is image/jpeg's inverse DCT.
func idct(b *block) { jpegdct.IDCT(b) }
