-- Batches (issue 33): jobs reserved together in one request. Each job stays a row of jobs;
-- batch_jobs links it to its batch, and unfinished counts the batch's jobs not yet final, so
-- the finish that brings it to 0 sets finished_at and records batch.finished (pgstore.finish).
CREATE TABLE batches (
    id          text PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id),
    job_ids     text[] NOT NULL,  -- in the order the request gave them
    unfinished  integer NOT NULL CHECK (unfinished >= 0),
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL, -- the jobs' own expires_at
    finished_at timestamptz
);
CREATE INDEX batches_expires ON batches (expires_at);

CREATE TABLE batch_jobs (
    job_id   text PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    batch_id text NOT NULL REFERENCES batches (id) ON DELETE CASCADE
);
CREATE INDEX batch_jobs_batch ON batch_jobs (batch_id);
