package document

import (
	"os"
	"path/filepath"

	"github.com/tetratelabs/wazero"
)

// PDFiumCacheDirEnv names the variable that sets where PDFium's compiled WebAssembly is kept
// between processes; "off" keeps nothing. Unset: <user cache dir>/convsvc/wazero.
const PDFiumCacheDirEnv = "CONVSVC_WASM_CACHE_DIR"

// pdfiumRuntimeConfig adds a compilation cache on disk to cfg, so only the first process on a
// machine pays for compiling PDFium (seconds of CPU and hundreds of MB); later ones load the
// compiled code. wazero keys the cache by its own version and the module's hash, so an upgrade
// never loads stale code. Without a usable directory, compilation happens in memory as before.
func pdfiumRuntimeConfig(cfg wazero.RuntimeConfig) wazero.RuntimeConfig {
	dir := pdfiumCacheDir()
	if dir == "" {
		return cfg
	}
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return cfg
	}
	return cfg.WithCompilationCache(cache)
}

// pdfiumCacheDir is the directory the compiled module is cached in, or "" for none.
func pdfiumCacheDir() string {
	switch dir := os.Getenv(PDFiumCacheDirEnv); dir {
	case "off":
		return ""
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(base, "convsvc", "wazero")
		if os.MkdirAll(dir, 0o700) != nil {
			return ""
		}
		return dir
	default:
		if os.MkdirAll(dir, 0o700) != nil {
			return ""
		}
		return dir
	}
}
