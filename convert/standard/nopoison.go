//go:build !poison

package standard

import (
	"github.com/convsvc/convsvc/convert"
)

// registerExtras adds nothing: the poison converters exist only with -tags poison.
func registerExtras(*convert.Catalog) {}
