package main

import (
	"bufio"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// THIRD_PARTY_NOTICES.md names every module go.mod requires with the licences its LICENSE file
// states, says whether the binary embeds it, and each of those licences is one the project
// accepts. The licences are read from the module cache (filled by any go build or go test of
// this repository) and go list runs with GOPROXY=off: the test needs no network.
func TestNotices_NameEveryModuleWithItsLicence(t *testing.T) {
	required := goModRequirements(t, "go.mod")
	notices := readNotices(t, "THIRD_PARTY_NOTICES.md")
	if len(notices.accepted) == 0 {
		t.Fatal("THIRD_PARTY_NOTICES.md has no 'Accepted licences:' line")
	}
	inBinary := binaryModules(t)
	modcache := goEnv(t, "GOMODCACHE")

	for _, m := range slices.Sorted(maps.Keys(required)) {
		row, ok := notices.modules[m]
		if !ok {
			t.Errorf("go.mod requires %s; THIRD_PARTY_NOTICES.md does not name it (add a row: module, licence, in the binary)", m)
			continue
		}
		for _, l := range row.licences {
			if !slices.Contains(notices.accepted, l) {
				t.Errorf("%s: licence %s is not one of the accepted licences (%s)", m, l, strings.Join(notices.accepted, ", "))
			}
		}
		if inBinary[m] != row.inBinary {
			t.Errorf("%s: THIRD_PARTY_NOTICES.md says in the binary %v; go list -deps of the build says %v", m, row.inBinary, inBinary[m])
		}
		dir := filepath.Join(modcache, escapeModulePath(m)+"@"+required[m])
		if _, err := os.Stat(dir); err != nil {
			if inBinary[m] {
				t.Errorf("%s is in the binary but not in the module cache (%v)", m, err)
			} else {
				// Required by go.mod but built by nothing here on this platform (mousetrap is
				// for Windows only): go never downloads it, so there is no file to read.
				t.Logf("%s %s is not in the module cache: licence as THIRD_PARTY_NOTICES.md states it", m, required[m])
			}
			continue
		}
		got := moduleLicences(t, dir)
		if !slices.Equal(got, row.licences) {
			t.Errorf("%s %s: its licence files say %s; THIRD_PARTY_NOTICES.md says %s", m, required[m], strings.Join(got, ", "), strings.Join(row.licences, ", "))
		}
	}
	for m := range notices.modules {
		if _, ok := required[m]; !ok {
			t.Errorf("THIRD_PARTY_NOTICES.md names %s, which go.mod does not require: remove its row", m)
		}
	}
}

// The licence detection tells the texts apart (each text from this repository's own files).
func TestNotices_DetectLicences(t *testing.T) {
	for _, tt := range []struct {
		file string
		want []string
	}{
		{"LICENSE", []string{"Apache-2.0"}},
		{"convert/internal/fonts/ttf/LICENSE-NanumGothic.txt", []string{"OFL-1.1"}},
		{"convert/internal/wasmcodec/LICENSES/libavif", []string{"Apache-2.0", "BSD-2-Clause"}}, // and IJG's libjpeg text, not a module's
		{"convert/internal/wasmcodec/LICENSES/aom", []string{"BSD-2-Clause"}},
		{"convert/internal/wasmcodec/LICENSES/libjxl", []string{"BSD-3-Clause"}},
		{"convert/internal/wasmcodec/LICENSES/gen2brain-avif", []string{"MIT"}},
	} {
		b, err := os.ReadFile(tt.file)
		if err != nil {
			t.Fatal(err)
		}
		if got := detectLicences(string(b)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.file, got, tt.want)
		}
	}
}

// licenceMarkers identify a licence by phrases of its text (compared lowercased, with runs of
// spaces, newlines and comment characters as one space). BSD-2-Clause is the BSD text without
// the endorsement clause; a file holding both counts them.
var licenceMarkers = []struct {
	id   string
	all  []string
	bsd2 bool // only when the file has more BSD texts than endorsement clauses
}{
	{id: "Apache-2.0", all: []string{"apache license", "version 2.0", "terms and conditions for use, reproduction, and distribution"}},
	{id: "Apache-2.0", all: []string{`licensed under the apache license, version 2.0 (the "license")`}}, // the short header
	{id: "MIT", all: []string{"permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated documentation files"}},
	{id: "BSD-3-Clause", all: []string{"redistribution and use in source and binary forms", bsdEndorsement}},
	{id: "BSD-2-Clause", all: []string{"redistribution and use in source and binary forms"}, bsd2: true},
	{id: "ISC", all: []string{"permission to use, copy, modify, and", "distribute this software for any purpose with or without fee is hereby granted"}},
	{id: "MPL-2.0", all: []string{"mozilla public license", "version 2.0"}},
	{id: "Unlicense", all: []string{"this is free and unencumbered software released into the public domain"}},
	{id: "OFL-1.1", all: []string{"sil open font license", "version 1.1"}},
	{id: "GPL", all: []string{"gnu general public license"}},
	{id: "LGPL", all: []string{"gnu lesser general public license"}},
	{id: "AGPL", all: []string{"gnu affero general public license"}},
}

const bsdEndorsement = "to endorse or promote products derived from this software"

// detectLicences names the licences whose markers all appear in text, sorted.
func detectLicences(text string) []string {
	norm := normalizeLicenceText(text)
	var found []string
	for _, m := range licenceMarkers {
		ok := true
		for _, p := range m.all {
			ok = ok && strings.Contains(norm, p)
		}
		if ok && m.bsd2 {
			ok = strings.Count(norm, m.all[0]) > strings.Count(norm, bsdEndorsement)
		}
		if ok && !slices.Contains(found, m.id) {
			found = append(found, m.id)
		}
	}
	slices.Sort(found)
	return found
}

func normalizeLicenceText(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsSpace(r) || r == '#' || r == '*' {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// licenceFile matches the names modules give their licence texts at their root.
var licenceFile = regexp.MustCompile(`(?i)^(un)?licen[cs]e([.-].*)?$|^copying([.-].*)?$`)

// moduleLicences reads every licence file at a module's root and names what they state.
func moduleLicences(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, e := range entries {
		if e.IsDir() || !licenceFile.MatchString(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range detectLicences(string(b)) {
			if !slices.Contains(all, l) {
				all = append(all, l)
			}
		}
	}
	if len(all) == 0 {
		all = []string{"none found"}
	}
	slices.Sort(all)
	return all
}

// goModRequirements returns each module go.mod requires, direct or indirect, with its version.
func goModRequirements(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	req := map[string]string{}
	block := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "require (":
			block = true
			continue
		case block && line == ")":
			block = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !block:
			continue
		}
		if f := strings.Fields(line); len(f) == 2 {
			req[f[0]] = f[1]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(req) == 0 {
		t.Fatal("go.mod requires nothing: not parsed")
	}
	return req
}

type noticeRow struct {
	licences []string
	inBinary bool
}

type notices struct {
	accepted []string
	modules  map[string]noticeRow
}

// readNotices reads the "Accepted licences:" line and the rows of the Go modules table
// (| `module` | licences | in the binary | ...), whose first cell is a module path in backquotes.
func readNotices(t *testing.T, path string) notices {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := notices{modules: map[string]noticeRow{}}
	row := regexp.MustCompile("^\\| `([a-z0-9.]+\\.[a-z]+/[^`]+)` \\| ([^|]+) \\| (yes|no)[^|]* \\|")
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Accepted licences: "); ok {
			for _, l := range strings.Split(strings.TrimSuffix(strings.TrimSpace(rest), "."), ",") {
				n.accepted = append(n.accepted, strings.TrimSpace(l))
			}
			continue
		}
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var ls []string
		for _, l := range strings.Split(m[2], ",") {
			ls = append(ls, strings.TrimSpace(l))
		}
		slices.Sort(ls)
		if _, dup := n.modules[m[1]]; dup {
			t.Errorf("THIRD_PARTY_NOTICES.md names %s twice", m[1])
		}
		n.modules[m[1]] = noticeRow{licences: ls, inBinary: m[3] == "yes"}
	}
	return n
}

// binaryModules lists the modules whose packages the cgo-free binary links (without build
// tags, the larger set: -tags nodynamic leaves out github.com/ebitengine/purego).
func binaryModules(t *testing.T) map[string]bool {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOPROXY=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, exitStderr(err))
	}
	mods := map[string]bool{}
	for _, m := range strings.Fields(string(out)) {
		if m != "github.com/convsvc/convsvc" {
			mods[m] = true
		}
	}
	return mods
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v\n%s", name, err, exitStderr(err))
	}
	return strings.TrimSpace(string(out))
}

func exitStderr(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}

// escapeModulePath is the module cache's spelling of a path: each capital letter becomes '!'
// and its lowercase.
func escapeModulePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
