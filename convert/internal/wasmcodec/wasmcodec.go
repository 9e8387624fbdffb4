// Package wasmcodec runs the AVIF (libavif with libaom and dav1d) and JPEG XL (libjxl) codecs,
// compiled to WebAssembly, in a wazero runtime whose compiled code is cached on disk, so only the
// first process on a machine pays for compiling them; later ones load the machine code.
//
// avif.wasm and jxldecode.wasm are the ones github.com/gen2brain/avif v0.5.3 and
// github.com/gen2brain/jpegxl v0.5.0 build and embed (those modules compile them anew in every
// process and offer no cache, which is why they are hosted here); aomenc.wasm, libaom's encoder
// with WebAssembly SIMD, is built here by aomenc/build.sh. README.md here gives their
// provenance and licences.
package wasmcodec

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
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
	cacheMu sync.Mutex
	caches  = map[string]wazero.CompilationCache{}
)

// sharedCache is the process's compilation cache on disk in CacheDir (one per directory), or
// nil without a directory. wazero keys its entries by its own version, the CPU's features,
// the module's hash and its settings, so an upgrade never loads stale code.
func sharedCache() wazero.CompilationCache {
	dir := CacheDir()
	if dir == "" {
		return nil
	}
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if c, ok := caches[dir]; ok {
		return c
	}
	c, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil
	}
	caches[dir] = c
	return c
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
	c.rt, c.cm, c.err = c.compileModule(sharedCache())
}

// compileModule compiles the codec (or loads it from cc, when not nil) into a runtime of its own.
func (c *codec) compileModule(cc wazero.CompilationCache) (wazero.Runtime, wazero.CompiledModule, error) {
	ctx := CompileContext(context.Background())
	cfg := wazero.NewRuntimeConfig().
		// Not WithCloseOnContextDone: the checks it compiles in made a 1 MP AVIF encode 4x
		// slower (0.40 -> 1.63 s), so a call, once started, runs to its end.
		WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesThreads)
	if cc != nil {
		cfg = cfg.WithCompilationCache(cc)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	fail := func(err error) (wazero.Runtime, wazero.CompiledModule, error) {
		rt.Close(ctx)
		return nil, nil, fmt.Errorf("%s: %w", c.name, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(c.gz))
	if err != nil {
		return fail(err)
	}
	bin, err := io.ReadAll(zr)
	if err != nil {
		return fail(err)
	}
	if bin, err = stripDebug(bin); err != nil {
		return fail(err)
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return fail(fmt.Errorf("wasi: %w", err))
	}
	cm, err := rt.CompileModule(ctx, bin)
	if err != nil {
		return fail(fmt.Errorf("compile: %w", err))
	}
	return rt, cm, nil
}

// CompileContext returns ctx set to compile WebAssembly on as many threads as Go runs
// goroutines on: a first compile of PDFium takes half the time on 2 cores.
func CompileContext(ctx context.Context) context.Context {
	return experimental.WithCompilationWorkers(ctx, runtime.GOMAXPROCS(0))
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

// codecs returns every embedded module.
func codecs() []*codec {
	if aomencWasm == nil {
		return []*codec{avifCodec, jxlDecoder}
	}
	return []*codec{avifCodec, aomEncoder, jxlDecoder}
}

// Warm compiles (or loads from the cache) every codec now rather than at its first use.
func Warm() error {
	var errs []error
	for _, c := range codecs() {
		errs = append(errs, c.warm())
	}
	return errors.Join(errs...)
}

// ModulesHash is a SHA-256 of the embedded modules: it changes when any of them does.
func ModulesHash() []byte {
	h := sha256.New()
	for _, c := range codecs() {
		h.Write(c.gz)
	}
	return h.Sum(nil)
}

// FillCache compiles every codec into the on-disk cache (CacheDir) unless it is there
// already, keeping nothing in this process: what a server does in the background at start,
// so that its workers and one-shot conversions load the compiled code instead of compiling
// it. It does nothing without a cache directory.
func FillCache() error {
	dir := CacheDir()
	if dir == "" {
		return nil
	}
	// A cache object of its own, closed at the end, so the compiled code is released here
	// and the process's shared one (which its codecs may be using) is left alone.
	cc, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return err
	}
	defer cc.Close(context.Background())
	var errs []error
	for _, c := range codecs() {
		rt, _, err := c.compileModule(cc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rt.Close(context.Background())
	}
	return errors.Join(errs...)
}

func (c *codec) warm() error {
	c.once.Do(c.compile)
	return c.err
}
