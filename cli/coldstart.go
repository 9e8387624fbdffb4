package cli

import (
	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/convert/standard"
)

// standalone is set by Execute: this process is the convsvc binary, so it may start itself
// (`convsvc precompile` in the background). Tests that run commands in their own process
// leave it false.
var standalone bool

// interpretMaxDPI is the highest resolution a page is interpreted at on a first run: at 300
// dpi wazero's interpreter took 1.6 s of CPU for a page, a third of compiling PDFium
// (docs/benchmarks.md, Cold starts); at higher resolutions its slower code costs more.
const interpretMaxDPI = 300

// coldStart prepares a one-shot conversion (by the embedded server) of one PDF page to an image while the WebAssembly
// compilation cache holds no fill by this binary (a first run ever, without `convsvc
// precompile`): PDFium runs in wazero's interpreter, about 1 s of CPU for a page at 150 dpi
// instead of 5 s compiling it first, to the same bytes; and `convsvc precompile` is started
// in the background, detached and at a lower priority, so that the next runs load the compiled
// code. Anything else (several pages, text, a server's conversions) compiles as before.
func (o *convertOptions) coldStart(plans []*plan, target client.Format) {
	if !standalone || len(plans) != 1 || plans[0].from != "pdf" ||
		target.Category != "image" || o.opts.Pages != "" || o.preset != "" || o.opts.DPI > interpretMaxDPI {
		return
	}
	if standard.WasmCacheDir() == "" || standard.WasmCacheFilled() {
		return
	}
	lock, err := standard.LockWasmCache(false)
	if err != nil {
		return
	}
	if lock == nil { // a fill runs already: the next run will load what it compiles
		standard.InterpretPDFium()
		return
	}
	defer lock.Close() // the child holds its own copy until it exits
	if startFill(lock) == nil {
		standard.InterpretPDFium()
	}
}
