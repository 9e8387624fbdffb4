// Package bytesize writes byte counts in binary units for people: progress lines, limits in
// error messages.
package bytesize

import "fmt"

// Binary splits n into a value in the largest binary unit it reaches and that unit's name
// ("KiB" up to "PiB"); below 1024 it returns n itself and "".
func Binary(n int64) (float64, string) {
	const unit = 1024
	if n < unit {
		return float64(n), ""
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return float64(n) / float64(div), [...]string{"KiB", "MiB", "GiB", "TiB", "PiB"}[exp]
}

// Format writes n with one decimal in a binary unit: "512 B", "1.5 KiB", "200.0 MiB".
func Format(n int64) string {
	v, unit := Binary(n)
	if unit == "" {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}
