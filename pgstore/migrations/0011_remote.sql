-- Remote files (issue 33, items 3 and 4): a job's source_url, fetched by a worker instead of an
-- upload ('' for an uploaded input), and its deliver_to ({"url", "headers"}), the PUT the worker
-- makes with the output (NULL when none). Nothing else of the caller's storage is kept.
ALTER TABLE jobs ADD COLUMN source_url text NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN deliver_to jsonb;
