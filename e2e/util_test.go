package e2e

import (
	"encoding/json"
	"errors"
	"io"

	"github.com/convsvc/convsvc/client"
)

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

// isCode reports whether err is an API error with the code.
func isCode(err error, code string) bool {
	var apiErr *client.APIError
	return errors.As(err, &apiErr) && string(apiErr.Code) == code
}
