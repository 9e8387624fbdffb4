// Package standard assembles the catalog convsvc serves from the converter families: the one
// place that knows every family. A program or a test that wants fewer builds its own catalog
// with convert.NewEmptyCatalog and the families' Register functions.
package standard

import (
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
