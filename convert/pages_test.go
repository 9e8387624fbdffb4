package convert

import (
	"slices"
	"strings"
	"testing"
)

// TestParsePages holds the grammar: what is accepted, in which order, and why the rest is not.
func TestParsePages(t *testing.T) {
	ok := []struct {
		spec   string
		canon  string
		single bool
		pages  []int // resolved against 10 pages
	}{
		{"all", "all", false, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{" ALL ", "all", false, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"1-3,7", "1-3,7", false, []int{1, 2, 3, 7}},
		{"7,1-3", "7,1-3", false, []int{7, 1, 2, 3}},
		{"8-", "8-", false, []int{8, 9, 10}},
		{" 2 - 4 , 9 ", "2-4,9", false, []int{2, 3, 4, 9}},
		{"3", "3", true, []int{3}},
		{"3-3", "3", true, []int{3}},
		{"10-", "10-", false, []int{10}},
	}
	for _, tc := range ok {
		s, err := ParsePages(tc.spec)
		if err != nil {
			t.Errorf("ParsePages(%q): %v", tc.spec, err)
			continue
		}
		if got := s.String(); got != tc.canon {
			t.Errorf("ParsePages(%q) = %q, want %q", tc.spec, got, tc.canon)
		}
		if s.Single() != tc.single {
			t.Errorf("ParsePages(%q).Single() = %v", tc.spec, s.Single())
		}
		got, err := s.Resolve(10)
		if err != nil || !slices.Equal(got, tc.pages) {
			t.Errorf("ParsePages(%q).Resolve(10) = %v, %v; want %v", tc.spec, got, err, tc.pages)
		}
	}
	bad := []struct{ spec, want string }{
		{"", "is empty"},
		{"0", "page 0"},
		{"-1", `"-1", which is not a page number`},
		{"3-1", `reversed range "3-1"`},
		{"1,1", "names page 1 twice"},
		{"1-3,2", "names page 2 twice (1-3 and 2)"},
		{"3-,5", "names page 5 twice (3- and 5)"},
		{"5,3-", "names page 5 twice"},
		{"10001", "over the 10000 page limit"},
		{"1-99999999999", "not a page number"},
		{"1,,2", "empty item"},
		{"1-2-3", "not a page number"},
		{"x", "not a page number"},
		{"+1", "not a page number"},
		{strings.Repeat("1", 1001), "longer than 1000"},
	}
	for _, tc := range bad {
		if _, err := ParsePages(tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePages(%q) = %v, want an error containing %q", tc.spec, err, tc.want)
		}
	}
}

// TestPageSpec_Resolve_PastLast names the page and the count.
func TestPageSpec_Resolve_PastLast(t *testing.T) {
	for spec, want := range map[string]string{
		"9":   "pages: 9 is past the last page (3)",
		"2-9": "pages: 9 is past the last page (3)",
		"5-":  "pages: 5 is past the last page (3)",
	} {
		s, err := ParsePages(spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Resolve(3); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", spec, err, want)
		}
	}
}

// FuzzParsePages: whatever the text, ParsePages returns quickly, an accepted spec is canonical
// (its String parses back to itself) and resolves to distinct pages within the bounds.
func FuzzParsePages(f *testing.F) {
	f.Add("1-3,7")
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := ParsePages(spec)
		if err != nil {
			return
		}
		again, err := ParsePages(s.String())
		if err != nil || again.String() != s.String() {
			t.Fatalf("%q -> %q -> %q, %v", spec, s.String(), again.String(), err)
		}
		pages, err := s.Resolve(MaxPageNumber)
		if err != nil {
			t.Fatalf("%q resolves with an error against %d pages: %v", spec, MaxPageNumber, err)
		}
		seen := map[int]bool{}
		for _, p := range pages {
			if p < 1 || p > MaxPageNumber || seen[p] {
				t.Fatalf("%q resolves to %v", spec, pages)
			}
			seen[p] = true
		}
		if s.Single() != (len(pages) == 1 && !s.All && s.Ranges[0].Last != 0) {
			t.Fatalf("%q: Single %v for %d pages", spec, s.Single(), len(pages))
		}
	})
}
