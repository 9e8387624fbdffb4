-- convsvc schema 7: webhook deliveries shared fairly (issue 38). A delivery names its
-- destination (host:port, store.WebhookDestination), so a claim caps the attempts in flight
-- per destination and per account and serves the accounts in turn; a destination found down
-- is paused in webhook_destinations and its deliveries are rescheduled to the pause's end.
-- (Numbered 7: 6 is left to the job-list indexes of the same round.)

-- webhook_destination is store.WebhookDestination in SQL: the lowercased host and the port
-- (the scheme's default when the URL names none). The guard admits only http(s) URLs with a
-- host and no user:password@, which is all it has to read.
CREATE FUNCTION webhook_destination(url text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN a IS NULL OR a = '' THEN url
        WHEN a ~ ':[0-9]+$' THEN a
        WHEN lower(substring(url from '^([A-Za-z][A-Za-z0-9+.-]*)://')) = 'https' THEN a || ':443'
        ELSE a || ':80'
    END
    FROM (SELECT lower(substring(url from '^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)')) AS a) AS parts
$$;

ALTER TABLE webhook_deliveries ADD COLUMN destination text NOT NULL DEFAULT '';
UPDATE webhook_deliveries SET destination = webhook_destination(url) WHERE state = 'pending';

-- Each account's due deliveries in order (a claim reads a few of every account's), the
-- attempts in flight per destination and account, and a destination's pending ones (to
-- reschedule them when it is paused).
CREATE INDEX webhook_deliveries_account_due ON webhook_deliveries (account_id, next_attempt_at, id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_inflight ON webhook_deliveries (destination, account_id) WHERE state = 'pending' AND claimed;
CREATE INDEX webhook_deliveries_destination ON webhook_deliveries (destination, next_attempt_at) WHERE state = 'pending';

-- A destination that is failing: attempts in a row that found it down, and when it takes
-- attempts again. A delivered attempt deletes its row.
CREATE TABLE webhook_destinations (
    destination  text PRIMARY KEY,
    failures     integer NOT NULL DEFAULT 0,
    paused_until timestamptz NOT NULL
);
