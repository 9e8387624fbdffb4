-- convsvc schema 3: webhooks (issue 26). Endpoints per account, the account's signing secret for
-- the webhook_url a job names, and one delivery per event and destination, written in the
-- transaction of the job's state change (pgstore.Store.finish).

CREATE TABLE webhook_endpoints (
    id            text PRIMARY KEY,
    account_id    text NOT NULL REFERENCES accounts (id),
    url           text NOT NULL,
    secret        text NOT NULL, -- signs the deliveries; the admin API shows it once
    created_at    timestamptz NOT NULL,
    failing_since timestamptz,   -- first failed attempt since the last delivered one
    disabled_at   timestamptz,   -- failing continuously too long (webhook.DisableAfter)
    seq           bigint GENERATED ALWAYS AS IDENTITY UNIQUE
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id, seq);

CREATE TABLE webhook_signing_secrets (
    account_id text PRIMARY KEY REFERENCES accounts (id),
    secret     text NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE job_webhooks (
    job_id text PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    url    text NOT NULL
);

CREATE TABLE webhook_deliveries (
    id               text PRIMARY KEY, -- event id '.' endpoint id (or 'job')
    event_id         text NOT NULL,
    event_type       text NOT NULL,
    account_id       text NOT NULL,
    job_id           text NOT NULL,    -- no reference: the delivery outlives the job
    endpoint_id      text,             -- NULL for the job's own webhook_url
    url              text NOT NULL,
    job              bytea NOT NULL,   -- the job as stored after the change (store.Job JSON)
    created_at       timestamptz NOT NULL,
    state            text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL, -- while claimed, the end of the claim
    claimed          boolean NOT NULL DEFAULT false,
    last_attempt_at  timestamptz,
    last_status_code integer NOT NULL DEFAULT 0,
    last_error       text NOT NULL DEFAULT '',
    delivered_at     timestamptz
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_account ON webhook_deliveries (account_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_done ON webhook_deliveries (created_at) WHERE state <> 'pending';
