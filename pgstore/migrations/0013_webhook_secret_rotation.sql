-- Rotating an account's webhook signing secret (issue 34 item 5): the secret it replaced keeps
-- signing deliveries beside it until previous_expires_at (docs/webhooks.md, "Rotating the
-- signing secret"); '' and NULL when there is none.
ALTER TABLE webhook_signing_secrets ADD COLUMN previous_secret text NOT NULL DEFAULT '';
ALTER TABLE webhook_signing_secrets ADD COLUMN previous_expires_at timestamptz;
-- The same for an endpoint's own secret.
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret text NOT NULL DEFAULT '';
ALTER TABLE webhook_endpoints ADD COLUMN previous_expires_at timestamptz;
