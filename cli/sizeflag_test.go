package cli

import "testing"

func TestSizeFlag(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1500000", 1500000, true},
		{"512MiB", 512 << 20, true},
		{"4GiB", 4 << 30, true},
		{"2GB", 2e9, true},
		{"1.5G", 3 << 29, true},
		{"0", 0, true},
		{"-1G", 0, false},
		{"lots", 0, false},
		{"9999999TiB", 0, false},
		{"NaN", 0, false}, // ParseFloat takes it, and NaN as an int64 is negative
		{"nanGiB", 0, false},
		{"Inf", 0, false},
		{"0x1p30", 0, false},
		{"1e9", 0, false},
		{".5GiB", 0, false},
		{"1.GiB", 0, false},
	}
	for _, tt := range tests {
		var b sizeFlag
		err := b.Set(tt.in)
		if (err == nil) != tt.ok || (tt.ok && int64(b) != tt.want) {
			t.Errorf("Set(%q) = %d, %v; want %d ok=%v", tt.in, b, err, tt.want, tt.ok)
		}
	}
	b := sizeFlag(4 << 30)
	if b.String() != "4GiB" {
		t.Errorf("String() = %s", b.String())
	}
}
