package image

import (
	"github.com/convsvc/convsvc/convert"
)

// testCatalog returns a catalog of the image family alone.
func testCatalog(lim convert.Limits) *convert.Catalog {
	c := convert.NewEmptyCatalog(lim)
	Register(c)
	return c
}
