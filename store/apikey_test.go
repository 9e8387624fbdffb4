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
		ok := ParseKey(s) == nil
		if ok && (len(s) != KeyLen || !strings.HasPrefix(s, KeyPrefix)) {
			t.Fatalf("accepted %q", s)
		}
		// The shape and checksum as the key's definition states them, written out slowly.
		want := len(s) == KeyLen && strings.HasPrefix(s, KeyPrefix)
		if want {
			body := s[len(KeyPrefix):]
			for _, c := range body {
				want = want && strings.ContainsRune(base62Alphabet, c)
			}
			want = want && keyChecksum(body[:keyRandomLen]) == body[keyRandomLen:]
		}
		if ok != want {
			t.Fatalf("ParseKey(%q) ok = %v, want %v", s, ok, want)
		}
	})
}

// Every request with a key parses it: the one allocation left is hash/crc32's copy of the
// random part (it passes the bytes through a function variable, so they escape).
func TestParseKey_Allocs(t *testing.T) {
	key := NewKeySecret()
	if n := testing.AllocsPerRun(100, func() {
		if ParseKey(key) != nil {
			t.Fatal("fresh key refused")
		}
	}); n > 1 {
		t.Errorf("ParseKey allocates %v times, want at most 1", n)
	}
}

func BenchmarkParseKey(b *testing.B) {
	key := NewKeySecret()
	b.ReportAllocs()
	for b.Loop() {
		if ParseKey(key) != nil {
			b.Fatal("fresh key refused")
		}
	}
}
