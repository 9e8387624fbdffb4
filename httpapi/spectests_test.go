package httpapi_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// specTestRef is a test named in docs/spec-tests.md, with the mark of the backend suite.
	specTestRef = regexp.MustCompile("`(Test[A-Za-z0-9_]+)`( \\(B\\))?(?: \\(([^()]*)\\))?")
	// quotedCase is a subtest or case named in a note, as "name"; conformanceCase is one of
	// TestConformance's subtests (the shared suite of store/storetest), named bare.
	quotedCase      = regexp.MustCompile(`"([^"]+)"`)
	conformanceCase = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]+\b`)
	testFunc        = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	suiteEntry      = regexp.MustCompile(`\{"[A-Za-z0-9_]+", (TestAPI_[A-Za-z0-9_]+)\}`)
)

// TestSpecTests_NamedTestsExist keeps docs/spec-tests.md honest: every test it names as holding
// a SPEC statement exists in the module, every one marked (B) runs in TestAPI_Backends, and the
// cases its notes name (a "quoted" case of a test, a TestConformance subtest) exist too.
func TestSpecTests_NamedTestsExist(t *testing.T) {
	doc, err := os.ReadFile("../docs/spec-tests.md")
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	var sources []byte // every _test.go file, where the notes' quoted cases must appear
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllSubmatch(src, -1) {
			defined[string(m[1])] = true
		}
		sources = append(sources, src...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("backends_test.go")
	if err != nil {
		t.Fatal(err)
	}
	inSuite := map[string]bool{}
	for _, m := range suiteEntry.FindAllSubmatch(src, -1) {
		inSuite[string(m[1])] = true
	}
	refs := specTestRef.FindAllStringSubmatch(string(doc), -1)
	if len(refs) < 50 {
		t.Fatalf("docs/spec-tests.md names %d tests; the table is gone or its format changed", len(refs))
	}
	conformance, err := os.ReadFile("../store/storetest/storetest.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range refs {
		name, backends, note := m[1], m[2] != "", m[3]
		if !defined[name] {
			t.Errorf("docs/spec-tests.md names %s, which no _test.go file defines", name)
		}
		if backends && !inSuite[name] {
			t.Errorf("docs/spec-tests.md marks %s (B), but backendSuite does not run it", name)
		}
		for _, c := range quotedCase.FindAllStringSubmatch(note, -1) {
			if !bytes.Contains(sources, []byte(`"`+c[1]+`"`)) {
				t.Errorf("docs/spec-tests.md names the case %q of %s, which no _test.go file has", c[1], name)
			}
		}
		if name == "TestConformance" {
			subtests := note // "A, B", or "store, pgstore: A, B"
			if _, after, ok := strings.Cut(note, ":"); ok {
				subtests = after
			}
			for _, c := range conformanceCase.FindAllString(subtests, -1) {
				if !bytes.Contains(conformance, []byte(`"`+c+`"`)) {
					t.Errorf("docs/spec-tests.md names TestConformance's subtest %s, which store/storetest does not run", c)
				}
			}
		}
	}
}
