package main

import (
	"bytes"
	"image/png"
	"reflect"
	"testing"
)

// TestWithNumber checks what -distinct uploads: a valid PNG of the original's pixels and
// length, different for each job number.
func TestWithNumber(t *testing.T) {
	orig := encodePNG(16)
	want, err := png.Decode(bytes.NewReader(orig))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	var size int
	for _, n := range []int{0, 1, 42, 999_999_999_999} {
		p := withNumber(orig, n)
		if size == 0 {
			size = len(p)
		}
		if len(p) != size || len(p) <= len(orig) {
			t.Fatalf("n=%d: %d bytes, want %d (more than the original's %d)", n, len(p), size, len(orig))
		}
		if m, ok := seen[string(p)]; ok {
			t.Fatalf("n=%d gives the same bytes as n=%d", n, m)
		}
		seen[string(p)] = n
		got, err := png.Decode(bytes.NewReader(p))
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("n=%d: the pixels differ from the original's", n)
		}
	}
}
