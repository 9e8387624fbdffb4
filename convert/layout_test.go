package convert

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is the import path prefix of the project's own packages.
const module = "github.com/convsvc/convsvc/"

// allowedImports lists, for each of the project's packages (module-relative; "x/*" is every
// package under x), the project packages its non-test files may import. docs/architecture.md
// explains the layering; a package missing here fails the test, so the document and the table
// grow together.
var allowedImports = map[string][]string{
	// The kernel: formats, graph, options, sniffing, budget, pool. It imports no family.
	"convert": {"internal/bytesize"},
	// The families: the kernel, shared codecs, and another family's exported API only where
	// the work needs it (documents embed and render images). Never the other way round.
	"convert/image":    {"convert", "convert/internal/*"},
	"convert/document": {"convert", "convert/image", "convert/internal/*", "convert/document/internal/*", "internal/bytesize"},
	// The document family's own rooms (the SVG reader, PDFium): what the family may import, and each
	// other. Go's internal rule keeps every other package out.
	"convert/document/internal/*": {"convert", "convert/image", "convert/internal/*", "convert/document/internal/*", "internal/pdfwrite"},
	"convert/data":                {"convert", "convert/internal/*", "internal/bytesize"},
	"convert/audio":               {"convert", "convert/internal/*", "internal/bytesize"},
	"convert/archive":             {"convert", "convert/internal/*", "internal/bytesize"},
	// The assembler knows every family; nothing in convert imports it.
	"convert/standard": {"convert", "convert/image", "convert/document", "convert/data", "convert/audio", "convert/archive", "convert/internal/*"},
	// The worker processes (server side and child): the kernel, and the standard catalog a
	// worker builds.
	"worker": {"convert", "convert/standard", "internal/bytesize"},
	// Codecs shared by families know neither the kernel nor a family; convtest (test helpers)
	// knows only the kernel.
	"convert/internal/convtest": {"convert"},
	"convert/internal/*":        {"convert/internal/*"},
	// Above convert: storage at the bottom, then the HTTP API, the service that wires them, the CLI.
	"store":     {},
	"blobstore": {},
	// The scale-out backends speak the embedded ones' types (store.Job, blobstore.ErrStorage),
	// and each conformance suite knows only the package whose types it asserts.
	"pgstore":            {"store"},
	"s3store":            {"blobstore"},
	"store/storetest":    {"store"},
	"blobstore/blobtest": {"blobstore"},
	"client":             {},
	// Small runtime helpers know only each other.
	"internal/*": {"internal/*"},
	// Test harnesses (testenv starts a whole service, so it may import what it starts). Only
	// _test.go files, other harnesses and the benchmark programs import them: see harnessImporters.
	"internal/testing/*": {"internal/*", "client", "httpapi", "httpapi/openapitest", "service", "store", "pgstore"},
	"httpapi":            {"convert", "store", "blobstore", "httpapi/*", "webhook"},
	"httpapi/*":          {},
	"service":            {"convert", "convert/standard", "store", "blobstore", "pgstore", "s3store", "httpapi", "internal/*", "webhook", "worker"},
	"cli":                {"convert", "convert/standard", "service", "client", "store", "blobstore", "pgstore", "s3store", "internal/*", "worker", "webhook"},
	"":                   {"cli"},
	"e2e":                {"internal/testing/*", "client"},
	"e2e/multinode":      {"internal/testing/*", "client", "pgstore"},
	"bench/*":            {"bench/internal/*", "internal/*", "client", "store", "blobstore", "service", "worker", "convert", "convert/standard"},
	// convbench built with one family alone (-tags convbench_audio, convbench_image).
	"bench/convbench": {"bench/internal/*", "internal/*", "convert", "convert/standard", "convert/audio", "convert/image"},
	// Webhook signing, request-forgery guard and sender: standard library only, so a receiver
	// can use it without the server.
	"webhook": {},
}

// harnesses is the prefix of the test harnesses' packages (internal/testing/...).
const harnesses = "internal/testing/"

// harnessImporters lists the packages whose non-test files may import a test harness: the
// harnesses themselves and the benchmark programs (which build and start the binary with
// testproc). Nothing the binary is built from may, whatever its allowedImports entry says.
var harnessImporters = []string{"internal/testing/*", "bench/*"}

// mayImport reports whether the non-test files of pkg may import the project package imp.
func mayImport(pkg, imp string, rules []string) bool {
	if strings.HasPrefix(imp, harnesses) && !slices.ContainsFunc(harnessImporters, func(r string) bool { return allows(r, pkg) }) {
		return false
	}
	return slices.ContainsFunc(rules, func(r string) bool { return allows(r, imp) })
}

// rulesFor returns the allowed imports of pkg: its own entry, else that of the nearest "x/*".
func rulesFor(pkg string) ([]string, bool) {
	if r, ok := allowedImports[pkg]; ok {
		return r, true
	}
	for p := pkg; p != "." && p != ""; {
		p = path.Dir(p)
		if r, ok := allowedImports[p+"/*"]; ok {
			return r, true
		}
	}
	return nil, false
}

// allows reports whether pattern ("x" or "x/*") covers imp.
func allows(pattern, imp string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/*"); ok {
		return strings.HasPrefix(imp, prefix+"/")
	}
	return pattern == imp
}

// TestLayout_Imports parses every non-test Go file of the module and checks its imports of the
// project's packages against allowedImports: the kernel imports no family, families import only
// the allowed family edges, nothing but the programs imports convert/standard, and no file the
// binary is built from imports a test harness (internal/testing/...).
func TestLayout_Imports(t *testing.T) {
	root := ".."
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "deploy" || name == "docs") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		pkg := filepath.ToSlash(rel)
		if pkg == "." {
			pkg = ""
		}
		rules, ok := rulesFor(pkg)
		if !ok {
			t.Errorf("package %q (%s) is not in allowedImports: add it, and to docs/architecture.md", pkg, p)
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			own, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			if !mayImport(pkg, own, rules) {
				t.Errorf("%s imports %s, which package %q may not (allowed: %v; test harnesses only in %v)", p, own, pkg, rules, harnessImporters)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d files: is the module root at %s?", checked, root)
	}
}

// TestLayout_RulesCatchViolations makes sure the rules can fail: the edges the layering forbids
// are refused.
func TestLayout_RulesCatchViolations(t *testing.T) {
	for _, tt := range []struct{ pkg, imp string }{
		{"convert", "convert/image"},
		{"convert", "convert/standard"},
		{"convert/image", "convert/document"},
		{"convert/data", "convert/document"},
		{"convert/archive", "convert/data"},
		{"convert/document", "convert/standard"},
		{"convert/internal/pngenc", "convert"},
		{"convert/internal/fonts", "convert/document/internal/svg"},
		{"convert/document/internal/svg", "convert/document"},
		{"httpapi", "convert/standard"},
		{"store", "convert"},
		{"service", "internal/testing/testenv"},
		{"cli", "internal/testing/testproc"},
		{"", "internal/testing/testproc"},
		{"internal/gcfloor", "internal/testing/testenv"},
		{"internal/promtext", "service"},
	} {
		rules, ok := rulesFor(tt.pkg)
		if !ok {
			t.Fatalf("no rules for %s", tt.pkg)
		}
		if mayImport(tt.pkg, tt.imp, rules) {
			t.Errorf("%s may import %s", tt.pkg, tt.imp)
		}
	}
}
