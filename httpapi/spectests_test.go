package httpapi_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// specTestRef is a test named in docs/spec-tests.md, with the mark of the backend suite.
	specTestRef = regexp.MustCompile("`(Test[A-Za-z0-9_]+)`( \\(B\\))?")
	testFunc    = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	suiteEntry  = regexp.MustCompile(`\{"[A-Za-z0-9_]+", (TestAPI_[A-Za-z0-9_]+)\}`)
)

// TestSpecTests_NamedTestsExist keeps docs/spec-tests.md honest: every test it names as holding
// a SPEC statement exists in the module, and every one marked (B) runs in TestAPI_Backends.
func TestSpecTests_NamedTestsExist(t *testing.T) {
	doc, err := os.ReadFile("../docs/spec-tests.md")
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
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
	for _, m := range refs {
		name, backends := m[1], m[2] != ""
		if !defined[name] {
			t.Errorf("docs/spec-tests.md names %s, which no _test.go file defines", name)
		}
		if backends && !inSuite[name] {
			t.Errorf("docs/spec-tests.md marks %s (B), but backendSuite does not run it", name)
		}
	}
}
