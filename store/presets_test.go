package store

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestDump_Presets: Dump (what admin migrate copies) carries every preset with its options,
// and a presets-only key keeps its limit; a file without presets dumps none.
func TestDump_Presets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "convsvc.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := s.Dump(); err != nil || len(d.Presets) != 0 {
		t.Fatalf("Dump of a store without presets: %v, %v", d.Presets, err)
	}
	acct, err := s.CreateAccount("a", 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateKeyWith(acct.ID, KeyOptions{PresetsOnly: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PutPreset(Preset{Name: "web-thumb", TargetFormat: "webp", Options: json.RawMessage(`{"width":320}`)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PutPreset(Preset{Name: "a4", TargetFormat: "pdf"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ro, err := OpenReadOnly(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	d, err := ro.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Presets) != 2 || d.Presets[0].Name != "a4" || d.Presets[1].Name != "web-thumb" || string(d.Presets[1].Options) != `{"width":320}` {
		t.Fatalf("presets %+v", d.Presets)
	}
	if len(d.Keys) != 1 || !d.Keys[0].PresetsOnly {
		t.Fatalf("keys %+v", d.Keys)
	}
}
