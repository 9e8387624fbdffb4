package cli

import (
	"fmt"
	"strconv"
	"strings"
)

// sizeFlag is a flag value in bytes that accepts units: 512MiB, 4GiB, 2GB, 1500000.
type sizeFlag int64

var byteUnits = []struct {
	suffix string
	factor int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1},
}

// Set parses a size with an optional unit.
func (b *sizeFlag) Set(s string) error {
	s = strings.TrimSpace(s)
	factor := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, factor = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.factor
			break
		}
	}
	// Plain decimals only: ParseFloat also takes NaN, Inf, hex and exponents, and NaN
	// converted to an int64 is negative.
	n, err := strconv.ParseFloat(s, 64)
	if !plainDecimal(s) || err != nil || n < 0 || n*float64(factor) > 1<<62 {
		return fmt.Errorf("not a size: %q (use bytes or a unit like 512MiB, 4GiB)", s)
	}
	*b = sizeFlag(n * float64(factor))
	return nil
}

// plainDecimal reports whether s is digits with at most one decimal point between digits.
func plainDecimal(s string) bool {
	intPart, frac, hasPoint := strings.Cut(s, ".")
	digits := func(p string) bool {
		if p == "" {
			return false
		}
		for _, c := range p {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	return digits(intPart) && (!hasPoint || digits(frac))
}

// String prints the size in the largest binary unit that divides it, or "0" for the default.
func (b *sizeFlag) String() string {
	n := int64(*b)
	for _, u := range []struct {
		suffix string
		factor int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.factor == 0 {
			return strconv.FormatInt(n/u.factor, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// Type names the flag's value in help.
func (b *sizeFlag) Type() string { return "size" }
