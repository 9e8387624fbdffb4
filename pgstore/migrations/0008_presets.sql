-- Presets: an operator's named jobs (PUT /v1/admin/presets/{name}), and keys limited to them.
CREATE TABLE presets (
    name          text PRIMARY KEY,
    target_format text NOT NULL,
    options       bytea,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);
ALTER TABLE api_keys ADD COLUMN presets_only boolean NOT NULL DEFAULT false;
