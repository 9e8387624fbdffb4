package testtime

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]float64{"": 1, "3": 3, "0.5": 0.5, "x": 1, "0": 1, "-2": 1} {
		if got := parse(in); got != want {
			t.Errorf("parse(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestScale(t *testing.T) {
	defer func(f float64) { factor = f }(factor)
	factor = 2.5
	if got := Scale(2 * time.Second); got != 5*time.Second {
		t.Errorf("Scale(2s) with factor 2.5 = %v, want 5s", got)
	}
}
