package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Preset is a named job an operator defined: a target format and the options every job made
// from it runs with. Options is the canonical JSON of the options (what the API checked at
// PUT), or empty for none.
type Preset struct {
	Name         string          `json:"name"`
	TargetFormat string          `json:"target_format"`
	Options      json.RawMessage `json:"options,omitempty"`
	CreatedAt    time.Time       `json:"created_at"`
	UpdatedAt    time.Time       `json:"updated_at"`
}

// MaxPresetNameLen bounds a preset's name.
const MaxPresetNameLen = 64

// ValidatePresetName checks a preset's name: 1 to 64 characters, lowercase letters, digits,
// '-', '_' and '.', starting with a letter or digit (it appears in URLs and CLI arguments).
func ValidatePresetName(name string) error {
	if name == "" || len(name) > MaxPresetNameLen {
		return fmt.Errorf("%w: a preset name is 1 to %d characters", ErrInvalidArgument, MaxPresetNameLen)
	}
	for i, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '-' || c == '_' || c == '.'):
		default:
			return fmt.Errorf("%w: preset name %q: use lowercase letters, digits, '-', '_' and '.', starting with a letter or digit", ErrInvalidArgument, name)
		}
	}
	return nil
}

// bucketPresets holds the presets: name -> Preset JSON.
var bucketPresets = []byte("presets")

// PutPreset creates the preset p.Name or replaces its target and options, in one
// transaction; it returns the stored preset and whether it was created. CreatedAt is kept on
// a replacement; UpdatedAt is now.
func (s *Store) PutPreset(p Preset) (Preset, bool, error) {
	if err := ValidatePresetName(p.Name); err != nil {
		return Preset{}, false, err
	}
	if p.TargetFormat == "" {
		return Preset{}, false, fmt.Errorf("%w: a preset needs a target_format", ErrInvalidArgument)
	}
	var out Preset
	var created bool
	err := s.update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketPresets)
		if err != nil {
			return err
		}
		now := s.opts.Now().UTC()
		out, created = p, false
		var old Preset
		switch err := getJSON(b, []byte(p.Name), &old); {
		case err == nil:
			out.CreatedAt = old.CreatedAt
		case err == ErrNotFound:
			out.CreatedAt, created = now, true
		default:
			return err
		}
		out.UpdatedAt = now
		if len(out.Options) == 0 {
			out.Options = nil
		}
		return putJSON(b, []byte(p.Name), out)
	})
	if err != nil {
		return Preset{}, false, fmt.Errorf("put preset %s: %w", p.Name, err)
	}
	return out, created, nil
}

// Preset returns the preset with the given name, or ErrNotFound.
func (s *Store) Preset(name string) (Preset, error) {
	var p Preset
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketPresets)
		if b == nil {
			return ErrNotFound
		}
		return getJSON(b, []byte(name), &p)
	})
	if err != nil {
		return Preset{}, fmt.Errorf("preset %s: %w", name, err)
	}
	return p, nil
}

// Presets lists every preset, by name.
func (s *Store) Presets() ([]Preset, error) {
	var out []Preset
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		out, err = dumpPresets(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("presets: %w", err)
	}
	return out, nil
}

// dumpPresets reads every preset, by name; a file from before presets has none.
func dumpPresets(tx *bolt.Tx) ([]Preset, error) {
	out := []Preset{}
	b := tx.Bucket(bucketPresets)
	if b == nil {
		return out, nil
	}
	err := b.ForEach(func(k, _ []byte) error {
		var p Preset
		if err := getJSON(b, k, &p); err != nil {
			return fmt.Errorf("preset %q: %w", k, err)
		}
		out = append(out, p)
		return nil
	})
	slices.SortFunc(out, func(a, b Preset) int { return strings.Compare(a.Name, b.Name) })
	return out, err
}

// DeletePreset removes a preset; an unknown name is ErrNotFound. Jobs created from it keep
// the target and options they were created with.
func (s *Store) DeletePreset(name string) error {
	err := s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketPresets)
		if b == nil || b.Get([]byte(name)) == nil {
			return ErrNotFound
		}
		return b.Delete([]byte(name))
	})
	if err != nil {
		return fmt.Errorf("delete preset %s: %w", name, err)
	}
	return nil
}
