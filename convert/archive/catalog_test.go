package archive

import (
	"sync"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/document"
	"github.com/convsvc/convsvc/convert/image"
)

// testCatalog is the archive family with the families whose outputs it packs: documents
// (pdf -> zip of PNG pages) and the images they render. It registers like standard.Register,
// which cannot be imported from here (it imports this package).
var testCatalog = sync.OnceValue(func() *convert.Catalog {
	c := convert.NewEmptyCatalog(convert.Limits{})
	image.Register(c)
	document.Register(c)
	Register(c)
	document.RegisterPDFPageArchive(c)
	return c
})
