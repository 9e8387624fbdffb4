package cli

import "fmt"

// plural writes a count with its noun: "1 month", "2 months" (one is the singular, many the
// plural, each with whatever words follow the noun).
func plural[N ~int | ~int32 | ~int64](n N, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
