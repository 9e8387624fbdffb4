package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// valueError is a value a flag cannot hold; it wraps the parser's error.
type valueError struct {
	msg string
	err error
}

func (e *valueError) Error() string { return e.msg }
func (e *valueError) Unwrap() error { return e.err }

// badValue is the refusal of a value a flag cannot hold, the same whether it came from the
// command line or from the flag's CONVSVC_* twin:
// --workers (CONVSVC_WORKERS) is "abc": not a whole number. A number that parses but is out
// of the flag's range gets the flag's own range message (validate).
func badValue(f *pflag.Flag, value string, err error) error {
	reason := err.Error()
	var num *strconv.NumError
	if errors.As(err, &num) {
		typ := f.Value.Type()
		whole := strings.HasPrefix(typ, "int") || strings.HasPrefix(typ, "uint")
		switch {
		case errors.Is(num.Err, strconv.ErrRange) && whole:
			reason = "out of range for a whole number"
		case errors.Is(num.Err, strconv.ErrRange):
			reason = "out of range"
		case whole:
			reason = "not a whole number"
		case strings.HasPrefix(typ, "float"):
			reason = "not a number"
		case typ == "bool":
			reason = "use true or false"
		}
	}
	return &valueError{fmt.Sprintf("--%s (%s) is %q: %s", f.Name, envName(f.Name), value, reason), err}
}
