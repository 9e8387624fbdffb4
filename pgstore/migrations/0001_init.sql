-- convsvc schema 1: accounts, keys, jobs (queue and leases), the monthly ledger, idempotency
-- keys and per-key rate windows. Applied once, under pg_advisory_lock, by pgstore.Open.

CREATE TABLE accounts (
    id              text PRIMARY KEY,
    name            text NOT NULL,
    spend_cap_cents bigint NOT NULL CHECK (spend_cap_cents >= 0),
    -- one cent per unfinished job (created, queued, running)
    reserved_cents  bigint NOT NULL DEFAULT 0 CHECK (reserved_cents >= 0),
    created_at      timestamptz NOT NULL,
    seq             bigint GENERATED ALWAYS AS IDENTITY UNIQUE
);

-- Spend per account and calendar month (UTC, "YYYY-MM"): cents is the month's successes;
-- purged_successes counts the succeeded jobs of that month that retention deleted since.
CREATE TABLE month_spend (
    account_id       text NOT NULL REFERENCES accounts (id),
    month            text NOT NULL,
    cents            bigint NOT NULL DEFAULT 0 CHECK (cents >= 0),
    purged_successes bigint NOT NULL DEFAULT 0 CHECK (purged_successes >= 0),
    PRIMARY KEY (account_id, month)
);

CREATE TABLE api_keys (
    id         text PRIMARY KEY,
    account_id text NOT NULL REFERENCES accounts (id),
    prefix     text NOT NULL,
    hash       bytea NOT NULL UNIQUE, -- SHA-256 of the secret; the secret is never stored
    created_at timestamptz NOT NULL,
    revoked_at timestamptz,
    seq        bigint GENERATED ALWAYS AS IDENTITY UNIQUE
);
CREATE INDEX api_keys_account ON api_keys (account_id, seq);

CREATE TABLE jobs (
    id               text PRIMARY KEY,
    seq              bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    account_id       text NOT NULL REFERENCES accounts (id),
    status           text NOT NULL CHECK (status IN ('created', 'queued', 'running', 'succeeded', 'failed', 'cancelled')),
    input_format     text NOT NULL,
    target_format    text NOT NULL,
    input_bytes      bigint NOT NULL,
    options          bytea, -- the client's JSON, byte for byte
    attempt          integer NOT NULL DEFAULT 0,
    error_code       text NOT NULL DEFAULT '',
    error_message    text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL,
    started_at       timestamptz,
    finished_at      timestamptz,
    expires_at       timestamptz NOT NULL,
    output_bytes     bigint,
    output_sha256    text,
    lease_owner      text,        -- the node running the job
    lease_expires_at timestamptz, -- renewed by Heartbeat; past it, any node's reaper requeues the job
    CHECK ((status = 'running') = (lease_expires_at IS NOT NULL)),
    CHECK (status <> 'succeeded' OR (output_bytes IS NOT NULL AND finished_at IS NOT NULL))
);
CREATE INDEX jobs_account ON jobs (account_id, seq DESC);
CREATE INDEX jobs_queue ON jobs (started_at, seq) WHERE status = 'queued';
CREATE INDEX jobs_leases ON jobs (lease_expires_at) WHERE status = 'running';
CREATE INDEX jobs_expiry ON jobs (expires_at);

CREATE TABLE idempotency_keys (
    account_id      text NOT NULL REFERENCES accounts (id),
    key             text NOT NULL,
    request_hash    text NOT NULL,
    job_id          text NOT NULL,
    response_status integer NOT NULL,
    response_body   bytea NOT NULL,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- Accepted write times per key in the rolling window (at most the limit of them). UNLOGGED:
-- a PostgreSQL crash forgets the windows, which only allows a burst afterwards.
CREATE UNLOGGED TABLE rate_windows (
    key_id text PRIMARY KEY,
    times  timestamptz[] NOT NULL
);

-- One row that Ping writes, to prove the database takes writes.
CREATE TABLE ping (
    id integer PRIMARY KEY CHECK (id = 1),
    at timestamptz NOT NULL
);
