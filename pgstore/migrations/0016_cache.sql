-- The conversion cache (docs/cache.md). A job records the input's SHA-256 (create's
-- input_sha256, or the upload's hash taken at start) and its cache base (what is converted to
-- what, how and by which converter versions); a job answered from the cache records that its
-- output is cached and whose stored output holds the bytes (output_object).
ALTER TABLE jobs ADD COLUMN input_sha256 text;
ALTER TABLE jobs ADD COLUMN cache_base text;
ALTER TABLE jobs ADD COLUMN output_cached boolean NOT NULL DEFAULT false;
ALTER TABLE jobs ADD COLUMN output_object text;

-- One cached output per key: the job (object) whose stored output holds it, what the Job shows
-- of it, and when a job last used it (least recently used entries are evicted first).
CREATE TABLE cache_entries (
	key             text PRIMARY KEY,
	object          text NOT NULL,
	output_bytes    bigint NOT NULL,
	output_sha256   text NOT NULL,
	output_attempt  integer NOT NULL,
	output_warnings text,
	output_verified boolean NOT NULL,
	last_used       timestamptz NOT NULL
);
CREATE INDEX cache_entries_last_used ON cache_entries (last_used, key);
CREATE INDEX cache_entries_object ON cache_entries (object);

-- References to stored outputs: one per job answered from it. The job that wrote an output
-- holds none; deleting it keeps an output with references. An entry goes with the last job
-- that uses its output.
CREATE TABLE cache_refs (
	object text PRIMARY KEY,
	refs   bigint NOT NULL CHECK (refs > 0)
);

-- Outputs whose job is gone and whose last reference was dropped: the sweeper deletes their
-- files, then the row.
CREATE TABLE cache_dead (object text PRIMARY KEY);

-- The entries' count and bytes, one row, kept in the transactions that change them.
CREATE TABLE cache_totals (
	id      integer PRIMARY KEY CHECK (id = 1),
	entries bigint NOT NULL,
	bytes   bigint NOT NULL
);
INSERT INTO cache_totals (id, entries, bytes) VALUES (1, 0, 0);

-- The job converting each cache key (single flight): a claim of another job with the key
-- while that one runs waits for it instead of converting the same input again.
CREATE TABLE cache_inflight (
	key    text PRIMARY KEY,
	job_id text NOT NULL
);
