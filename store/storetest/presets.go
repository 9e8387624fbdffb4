package storetest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/convsvc/convsvc/store"
)

// PresetBackend is what the preset cases need besides Backend: the operator's named jobs and
// keys limited to them.
type PresetBackend interface {
	PutPreset(p store.Preset) (store.Preset, bool, error)
	Preset(name string) (store.Preset, error)
	Presets() ([]store.Preset, error)
	DeletePreset(name string) error
	CreateKeyWith(accountID string, o store.KeyOptions) (store.APIKey, string, error)
}

// presetCases run on every backend like the rest of the suite.
var presetCases = []testCase{
	{"Presets", testPresets},
	{"PresetInvalid", testPresetInvalid},
	{"PresetsOnlyKey", testPresetsOnlyKey},
}

func init() { cases = append(cases, presetCases...) }

func (f *fixture) presets() PresetBackend {
	f.t.Helper()
	pb, ok := f.s.(PresetBackend)
	if !ok {
		f.t.Fatalf("%T does not implement storetest.PresetBackend", f.s)
	}
	return pb
}

// testPresets: put creates then replaces (keeping created_at), get and list return what was
// stored (options byte for byte), delete removes, and an unknown name is ErrNotFound.
func testPresets(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	pb := f.presets()
	if got, err := pb.Presets(); err != nil || len(got) != 0 {
		t.Fatalf("Presets on an empty store = %v, %v", got, err)
	}
	if _, err := pb.Preset("web-thumb"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown preset: %v, want ErrNotFound", err)
	}
	opts := json.RawMessage(`{"quality":75,"width":320}`)
	p, created, err := pb.PutPreset(store.Preset{Name: "web-thumb", TargetFormat: "webp", Options: opts})
	if err != nil || !created {
		t.Fatalf("PutPreset = %v, created %v", err, created)
	}
	if p.CreatedAt.IsZero() || !p.UpdatedAt.Equal(p.CreatedAt) {
		t.Fatalf("times of a new preset: created %v, updated %v", p.CreatedAt, p.UpdatedAt)
	}
	if _, _, err := pb.PutPreset(store.Preset{Name: "all-pages", TargetFormat: "png"}); err != nil {
		t.Fatal(err)
	}
	got, err := pb.Preset("web-thumb")
	if err != nil || got.TargetFormat != "webp" || string(got.Options) != string(opts) || !got.CreatedAt.Equal(p.CreatedAt) {
		t.Fatalf("Preset = %+v, %v; want %+v", got, err, p)
	}
	p2, created, err := pb.PutPreset(store.Preset{Name: "web-thumb", TargetFormat: "jpeg", Options: json.RawMessage(`{"width":100}`)})
	if err != nil || created {
		t.Fatalf("replacing PutPreset = %v, created %v", err, created)
	}
	if !p2.CreatedAt.Equal(p.CreatedAt) || p2.UpdatedAt.Before(p.UpdatedAt) || p2.TargetFormat != "jpeg" {
		t.Fatalf("replaced preset %+v, first %+v", p2, p)
	}
	list, err := pb.Presets()
	if err != nil || len(list) != 2 || list[0].Name != "all-pages" || list[1].Name != "web-thumb" || string(list[1].Options) != `{"width":100}` || list[0].Options != nil {
		t.Fatalf("Presets = %+v, %v", list, err)
	}
	if err := pb.DeletePreset("web-thumb"); err != nil {
		t.Fatal(err)
	}
	if err := pb.DeletePreset("web-thumb"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleting again: %v, want ErrNotFound", err)
	}
	if _, err := pb.Preset("web-thumb"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted preset: %v, want ErrNotFound", err)
	}
}

// testPresetInvalid: names that would not survive a URL or a shell, and a missing target,
// are ErrInvalidArgument and store nothing.
func testPresetInvalid(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	pb := f.presets()
	for _, p := range []store.Preset{
		{Name: "", TargetFormat: "png"},
		{Name: "Web", TargetFormat: "png"},
		{Name: "-x", TargetFormat: "png"},
		{Name: "a/b", TargetFormat: "png"},
		{Name: string(make([]byte, 65)), TargetFormat: "png"},
		{Name: "ok", TargetFormat: ""},
	} {
		if _, _, err := pb.PutPreset(p); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("PutPreset(%q, %q) = %v, want ErrInvalidArgument", p.Name, p.TargetFormat, err)
		}
	}
	if list, err := pb.Presets(); err != nil || len(list) != 0 {
		t.Fatalf("Presets = %v, %v", list, err)
	}
}

// testPresetsOnlyKey: a key created presets-only says so when it authenticates and in the
// account's key list; other keys do not.
func testPresetsOnlyKey(t *testing.T, newStore NewFunc) {
	f := newFixture(t, newStore, Options{}, 100)
	key, secret, err := f.presets().CreateKeyWith(f.acct.ID, store.KeyOptions{PresetsOnly: true})
	if err != nil || !key.PresetsOnly {
		t.Fatalf("CreateKeyWith = %+v, %v", key, err)
	}
	got, err := f.s.Authenticate(secret)
	if err != nil || !got.PresetsOnly || got.ID != key.ID {
		t.Fatalf("Authenticate = %+v, %v", got, err)
	}
	plain, err := f.s.Authenticate(f.secret)
	if err != nil || plain.PresetsOnly {
		t.Fatalf("Authenticate(plain key) = %+v, %v", plain, err)
	}
	if _, _, err := f.presets().CreateKeyWith("acct_nosuchaccount", store.KeyOptions{PresetsOnly: true}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("key for an unknown account: %v", err)
	}
}
