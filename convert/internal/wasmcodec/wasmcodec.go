// Package wasmcodec runs the AVIF (libavif with libaom and dav1d) and JPEG XL (libjxl) codecs,
// compiled to WebAssembly, in a wazero runtime whose compiled code is cached on disk, so only the
// first process on a machine pays for compiling them; later ones load the machine code.
//
// The .wasm files are the ones github.com/gen2brain/avif v0.5.3 and github.com/gen2brain/jpegxl
// v0.5.0 build and embed (see README.md here for their provenance and licences); those modules
// compile them anew in every process and offer no cache, which is why they are hosted here.
package wasmcodec

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// CacheDirEnv names the variable that sets where compiled WebAssembly is kept between processes
// ("off" keeps nothing). Unset: <user cache dir>/convsvc/wazero. PDFium's cache uses the same one.
const CacheDirEnv = "CONVSVC_WASM_CACHE_DIR"

// CacheDir is the directory compiled modules are cached in, created if missing, or "" for none
// (CONVSVC_WASM_CACHE_DIR=off, or no usable directory).
func CacheDir() string {
	dir := os.Getenv(CacheDirEnv)
	switch dir {
	case "off":
		return ""
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(base, "convsvc", "wazero")
	}
	if os.MkdirAll(dir, 0o700) != nil {
		return ""
	}
	return dir
}

var (
	cacheOnce sync.Once
	cache     wazero.CompilationCache
)

// sharedCache is the process's one compilation cache on disk, or nil without a directory.
// wazero keys its entries by its own version, the CPU's features, the module's hash and
// its settings, so an upgrade never loads stale code.
func sharedCache() wazero.CompilationCache {
	cacheOnce.Do(func() {
		if dir := CacheDir(); dir != "" {
			if c, err := wazero.NewCompilationCacheWithDir(dir); err == nil {
				cache = c
			}
		}
	})
	return cache
}

// codec is one compiled WebAssembly module, compiled (or loaded from the cache) on first use
// and instantiated afresh for every call, so each call's linear memory is released when it
// returns.
type codec struct {
	name string
	gz   []byte // the gzip-compressed module

	once sync.Once
	rt   wazero.Runtime
	cm   wazero.CompiledModule
	err  error
}

func (c *codec) compile() {
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfig().
		// Not WithCloseOnContextDone: the checks it compiles in made a 1 MP AVIF encode 4x
		// slower (0.40 -> 1.63 s), so a call, once started, runs to its end.
		WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesThreads)
	if cc := sharedCache(); cc != nil {
		cfg = cfg.WithCompilationCache(cc)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	zr, err := gzip.NewReader(bytes.NewReader(c.gz))
	if err != nil {
		c.err = fmt.Errorf("%s: %w", c.name, err)
		return
	}
	bin, err := io.ReadAll(zr)
	if err != nil {
		c.err = fmt.Errorf("%s: %w", c.name, err)
		return
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		c.err = fmt.Errorf("%s: wasi: %w", c.name, err)
		return
	}
	cm, err := rt.CompileModule(ctx, bin)
	if err != nil {
		c.err = fmt.Errorf("%s: compile: %w", c.name, err)
		return
	}
	c.rt, c.cm = rt, cm
}

// instance is one instantiation of a codec for one call.
type instance struct {
	name string
	ctx  context.Context
	mod  api.Module
	mem  api.Memory
	fns  map[string]api.Function
}

// instantiate compiles the codec if this process has not yet and starts a fresh instance,
// which the caller closes.
func (c *codec) instantiate(ctx context.Context) (*instance, error) {
	c.once.Do(c.compile)
	if c.err != nil {
		return nil, c.err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// No name, so instances can run side by side; stdout and stderr go nowhere, since the
	// process's own may carry an output (convert -o -).
	mod, err := c.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, memoryAllocator), c.cm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		return nil, fmt.Errorf("%s: instantiate: %w", c.name, err)
	}
	return &instance{name: c.name, ctx: ctx, mod: mod, mem: mod.Memory(), fns: map[string]api.Function{}}, nil
}

func (in *instance) close() { in.mod.Close(context.Background()) }

// call runs an exported function.
func (in *instance) call(fn string, args ...uint64) (uint64, error) {
	f, ok := in.fns[fn]
	if !ok {
		f = in.mod.ExportedFunction(fn)
		if f == nil {
			return 0, fmt.Errorf("%s: no function %q", in.name, fn)
		}
		in.fns[fn] = f
	}
	res, err := f.Call(in.ctx, args...)
	if err != nil {
		return 0, fmt.Errorf("%s: %s: %w", in.name, fn, err)
	}
	if len(res) == 0 {
		return 0, nil
	}
	return res[0], nil
}

// malloc allocates n bytes in the instance's memory.
func (in *instance) malloc(n int) (uint32, error) {
	if n < 0 || int64(n) > int64(^uint32(0)) {
		return 0, fmt.Errorf("%s: allocation of %d bytes out of range", in.name, n)
	}
	p, err := in.call("malloc", uint64(n))
	if err != nil {
		return 0, err
	}
	if p == 0 {
		return 0, fmt.Errorf("%s: %w (%d bytes)", in.name, ErrNoMemory, n)
	}
	return uint32(p), nil
}

// write copies b into the instance's memory at p.
func (in *instance) write(p uint32, b []byte) error {
	if !in.mem.Write(p, b) {
		return fmt.Errorf("%s: write of %d bytes at %#x out of range", in.name, len(b), p)
	}
	return nil
}

// read returns a view of n bytes of the instance's memory at p, valid until it is closed.
func (in *instance) read(p uint32, n int) ([]byte, error) {
	if n < 0 || int64(n) > int64(^uint32(0)) {
		return nil, fmt.Errorf("%s: read of %d bytes out of range", in.name, n)
	}
	b, ok := in.mem.Read(p, uint32(n))
	if !ok {
		return nil, fmt.Errorf("%s: read of %d bytes at %#x out of range", in.name, n, p)
	}
	return b, nil
}

func (in *instance) u32(p uint32) (uint32, error) {
	v, ok := in.mem.ReadUint32Le(p)
	if !ok {
		return 0, fmt.Errorf("%s: read at %#x out of range", in.name, p)
	}
	return v, nil
}

// ErrNoMemory reports that a codec's 32-bit memory (4 GiB at most) could not hold an allocation.
var ErrNoMemory = errors.New("out of WebAssembly memory")

// Warm compiles (or loads from the cache) every codec now rather than at its first use.
func Warm() error {
	return errors.Join(avifCodec.warm(), jxlDecoder.warm())
}

func (c *codec) warm() error {
	c.once.Do(c.compile)
	return c.err
}
