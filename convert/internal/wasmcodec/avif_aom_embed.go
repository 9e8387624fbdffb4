//go:build aomsimd

package wasmcodec

import _ "embed"

//go:embed aomenc.wasm.gz
var aomencEmbedded []byte

func init() { aomencWasm, aomEncoder.gz = aomencEmbedded, aomencEmbedded }
