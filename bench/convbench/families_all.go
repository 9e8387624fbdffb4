//go:build !convbench_audio && !convbench_image

package main

import (
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/standard"
)

// newCatalog is the catalog convsvc serves: every family.
func newCatalog() *convert.Catalog { return standard.NewCatalog(convert.Limits{}) }
