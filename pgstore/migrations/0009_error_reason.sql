-- A failed job's finer reason beside error_code (docs/decisions.md, "Finer failure reasons"):
-- memory_exceeded, worker_crashed, ...; '' when error_code says all there is.
ALTER TABLE jobs ADD COLUMN error_reason text NOT NULL DEFAULT '';
