//go:build convbench_audio

package main

import (
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/audio"
)

// newCatalog holds the audio family alone.
func newCatalog() *convert.Catalog {
	c := convert.NewEmptyCatalog(convert.Limits{})
	audio.Register(c)
	return c
}
