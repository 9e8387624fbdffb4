package document

import (
	"github.com/tetratelabs/wazero"

	"github.com/convsvc/convsvc/convert/internal/wasmcodec"
)

// PDFiumCacheDirEnv names the variable that sets where PDFium's compiled WebAssembly is kept
// between processes; "off" keeps nothing. Unset: <user cache dir>/convsvc/wazero. It is the
// same variable the AVIF and JPEG XL codecs use (wasmcodec.CacheDirEnv).
const PDFiumCacheDirEnv = wasmcodec.CacheDirEnv

// pdfiumRuntimeConfig adds a compilation cache on disk to cfg, so only the first process on a
// machine pays for compiling PDFium (seconds of CPU and hundreds of MB); later ones load the
// compiled code. wazero keys the cache by its own version and the module's hash, so an upgrade
// never loads stale code. Without a usable directory, compilation happens in memory as before.
func pdfiumRuntimeConfig(cfg wazero.RuntimeConfig) wazero.RuntimeConfig {
	dir := wasmcodec.CacheDir()
	if dir == "" {
		return cfg
	}
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return cfg
	}
	return cfg.WithCompilationCache(cache)
}
