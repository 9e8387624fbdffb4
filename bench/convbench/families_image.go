//go:build convbench_image

package main

import (
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/image"
)

// newCatalog holds the image family alone.
func newCatalog() *convert.Catalog {
	c := convert.NewEmptyCatalog(convert.Limits{})
	image.Register(c)
	return c
}
