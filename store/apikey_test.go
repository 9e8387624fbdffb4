package store

import (
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	good := NewKeySecret()
	tests := []struct {
		name string
		key  string
		ok   bool
	}{
		{"fresh key", good, true},
		{"empty", "", false},
		{"prefix only", KeyPrefix, false},
		{"wrong prefix", "cs_test_" + good[len(KeyPrefix):], false},
		{"truncated", good[:len(good)-1], false},
		{"extra char", good + "a", false},
		{"typo in body", good[:10] + flip(good[10]) + good[11:], false},
		{"typo in checksum", good[:len(good)-1] + string(flip(good[len(good)-1])), false},
		{"non-base62", good[:10] + "-" + good[11:], false},
		{"unicode", strings.Repeat("é", KeyLen/2), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseKey(tt.key) == nil; got != tt.ok {
				t.Errorf("ParseKey(%q) ok = %v, want %v", tt.key, got, tt.ok)
			}
		})
	}
}

func flip(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

func TestNewKeySecret_Shape(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		k := NewKeySecret()
		if len(k) != KeyLen || !strings.HasPrefix(k, KeyPrefix) || seen[k] {
			t.Fatalf("bad or repeated key %q", k)
		}
		seen[k] = true
	}
}

func FuzzParseKey(f *testing.F) {
	f.Add(NewKeySecret())
	f.Add("cs_live_")
	f.Add("Bearer cs_live_x")
	f.Fuzz(func(t *testing.T, s string) {
		if ParseKey(s) == nil && (len(s) != KeyLen || !strings.HasPrefix(s, KeyPrefix)) {
			t.Fatalf("accepted %q", s)
		}
	})
}
