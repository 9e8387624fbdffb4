package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/store"
)

const presetCols = `name, target_format, options, created_at, updated_at`

func scanPreset(row pgx.Row) (store.Preset, error) {
	var p store.Preset
	var opts []byte
	err := row.Scan(&p.Name, &p.TargetFormat, &opts, &p.CreatedAt, &p.UpdatedAt)
	if isNoRows(err) {
		return store.Preset{}, store.ErrNotFound
	}
	if len(opts) > 0 {
		p.Options = opts
	}
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return p, err
}

// PutPreset creates the preset p.Name or replaces its target and options, in one statement;
// it returns the stored preset and whether it was created. CreatedAt is kept on a
// replacement; UpdatedAt is the database's now.
func (s *Store) PutPreset(p store.Preset) (store.Preset, bool, error) {
	if err := store.ValidatePresetName(p.Name); err != nil {
		return store.Preset{}, false, err
	}
	if p.TargetFormat == "" {
		return store.Preset{}, false, fmt.Errorf("%w: a preset needs a target_format", store.ErrInvalidArgument)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	var opts []byte
	if len(p.Options) > 0 {
		opts = p.Options
	}
	var created bool
	row := s.pool.QueryRow(ctx, `INSERT INTO presets (name, target_format, options, created_at, updated_at)
		VALUES ($1, $2, $3, now(), now())
		ON CONFLICT (name) DO UPDATE SET target_format = EXCLUDED.target_format, options = EXCLUDED.options, updated_at = now()
		RETURNING `+presetCols+`, (xmax = 0)`, p.Name, p.TargetFormat, opts)
	var out store.Preset
	var stored []byte
	err := row.Scan(&out.Name, &out.TargetFormat, &stored, &out.CreatedAt, &out.UpdatedAt, &created)
	if err != nil {
		return store.Preset{}, false, wrap("put preset", err)
	}
	if len(stored) > 0 {
		out.Options = stored
	}
	out.CreatedAt, out.UpdatedAt = out.CreatedAt.UTC(), out.UpdatedAt.UTC()
	return out, created, nil
}

// Preset returns the preset with the given name, or ErrNotFound.
func (s *Store) Preset(name string) (store.Preset, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	p, err := scanPreset(s.pool.QueryRow(ctx, `SELECT `+presetCols+` FROM presets WHERE name = $1`, name))
	if err != nil {
		return store.Preset{}, wrap("preset", err)
	}
	return p, nil
}

// Presets lists every preset, by name.
func (s *Store) Presets() ([]store.Preset, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT `+presetCols+` FROM presets ORDER BY name COLLATE "C"`)
	if err != nil {
		return nil, wrap("presets", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Preset, error) { return scanPreset(row) })
	if err != nil {
		return nil, wrap("presets", err)
	}
	if out == nil {
		out = []store.Preset{}
	}
	return out, nil
}

// DeletePreset removes a preset; an unknown name is ErrNotFound.
func (s *Store) DeletePreset(name string) error {
	ctx, cancel := s.ctx()
	defer cancel()
	tag, err := s.pool.Exec(ctx, `DELETE FROM presets WHERE name = $1`, name)
	if err != nil {
		return wrap("delete preset", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete preset %s: %w", name, store.ErrNotFound)
	}
	return nil
}

// importPresets writes the presets in the import's transaction.
func importPresets(ctx context.Context, tx pgx.Tx, presets []store.Preset, counts *ImportCounts) error {
	for _, p := range presets {
		var opts []byte
		if len(p.Options) > 0 {
			opts = p.Options
		}
		if _, err := tx.Exec(ctx, `INSERT INTO presets (name, target_format, options, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)`,
			p.Name, p.TargetFormat, opts, p.CreatedAt.UTC(), p.UpdatedAt.UTC()); err != nil {
			return fmt.Errorf("preset %s: %w", p.Name, err)
		}
		counts.Presets++
	}
	return nil
}
