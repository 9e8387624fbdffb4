// Package standard assembles the catalog convsvc serves from the converter families: the one
// place that knows every family. A program or a test that wants fewer builds its own catalog
// with convert.NewEmptyCatalog and the families' Register functions.
package standard

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/archive"
	"github.com/convsvc/convsvc/convert/audio"
	"github.com/convsvc/convsvc/convert/data"
	"github.com/convsvc/convsvc/convert/document"
	"github.com/convsvc/convsvc/convert/image"
	"github.com/convsvc/convsvc/convert/internal/wasmcodec"
)

// NewCatalog returns a catalog of every standard family's formats and converters.
func NewCatalog(lim convert.Limits) *convert.Catalog {
	c := convert.NewEmptyCatalog(lim)
	Register(c)
	return c
}

// Register adds every standard family to c, in the order their registrations depend on.
func Register(c *convert.Catalog) {
	image.Register(c)
	document.Register(c) // embeds and renders images
	data.Register(c)     // tables as Markdown and HTML when the document family is there
	audio.Register(c)
	archive.Register(c)
	document.RegisterPDFPageArchive(c) // pdf -> zip of PNG pages needs the archive family's zip
	registerExtras(c)
}

// DefaultFontDir is the font directory used unless SetFontDir says otherwise.
const DefaultFontDir = document.DefaultFontDir

// SetFontDir sets the directory searched for fonts that documents and SVG text name or need
// beyond the embedded ones ("" for none); see document.SetFontDir.
func SetFontDir(dir string) { document.SetFontDir(dir) }

// WasmCacheDir is the directory the WebAssembly codecs keep compiled modules in between
// processes, or "" for none (the worker processes are allowed to write there).
func WasmCacheDir() string { return wasmcodec.CacheDir() }

// FillWasmCache compiles every WebAssembly codec (PDFium, AVIF, JPEG XL) into WasmCacheDir
// unless it is there already, keeping nothing in this process, so that later processes (the
// worker processes, one-shot conversions) load the compiled code instead of compiling it:
// seconds of CPU each on a first run. It does nothing without a cache directory.
//
// A marker file in the directory, named after the modules' versions, records a fill, so later
// starts skip even the loading; a cache emptied by hand behind it means compiling at first use.
//
// One fill runs at a time on a directory: FillWasmCache waits for the fill lock
// (LockWasmCache), then finds the marker a concurrent fill left.
func FillWasmCache() error {
	dir := WasmCacheDir()
	if dir == "" {
		return nil
	}
	lock, err := LockWasmCache(true)
	if err != nil {
		return err
	}
	defer lock.Close()
	return FillWasmCacheLocked()
}

// FillWasmCacheLocked is FillWasmCache for a caller that holds the fill lock already (a
// process started with the lock LockWasmCache returned to its parent).
func FillWasmCacheLocked() error {
	dir := WasmCacheDir()
	if dir == "" || WasmCacheFilled() {
		return nil
	}
	if err := errors.Join(document.FillPDFiumCache(), wasmcodec.FillCache()); err != nil {
		return err
	}
	return os.WriteFile(wasmCacheMarker(dir), nil, 0o600)
}

// wasmCacheMarker is the marker file of a fill of dir by this binary.
func wasmCacheMarker(dir string) string {
	return filepath.Join(dir, "convsvc-filled-"+wasmModulesKey())
}

// WasmCacheFilled reports whether WasmCacheDir holds this binary's codecs compiled by a fill
// (its marker is there); false without a cache directory.
func WasmCacheFilled() bool {
	dir := WasmCacheDir()
	if dir == "" {
		return false
	}
	_, err := os.Stat(wasmCacheMarker(dir))
	return err == nil
}

// LockWasmCache takes the fill lock of WasmCacheDir (an advisory lock on the directory
// itself, where the system has them), waiting for it when wait is true; without wait it
// returns nil, nil when another process holds it. Closing the returned file releases the
// lock; a child process given the file keeps it until the child exits.
func LockWasmCache(wait bool) (*os.File, error) {
	dir := WasmCacheDir()
	if dir == "" {
		return nil, errors.New("no WebAssembly compilation cache directory")
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	ok, err := lockFile(f, wait)
	if err != nil || !ok {
		f.Close()
		return nil, err
	}
	return f, nil
}

// InterpretPDFium makes this process run PDFium in wazero's interpreter instead of compiling
// it, if called before its first PDF conversion: about 1 s of CPU for one page at 150 dpi
// instead of 5 s to compile, the same bytes, but slower for many pages (document.InterpretPDFium).
func InterpretPDFium() { document.InterpretPDFium() }

// wasmModulesKey names the WebAssembly modules this binary runs and the runtime that compiles
// them: wazero's and go-pdfium's versions and the hash of the embedded codecs.
func wasmModulesKey() string {
	h := sha256.New()
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/tetratelabs/wazero" || d.Path == "github.com/klippa-app/go-pdfium" {
				fmt.Fprintf(h, "%s %s %s\n", d.Path, d.Version, d.Sum)
			}
		}
	}
	h.Write(wasmcodec.ModulesHash())
	fmt.Fprintf(h, "%s/%s\n", runtime.GOOS, runtime.GOARCH)
	return hex.EncodeToString(h.Sum(nil)[:12])
}
