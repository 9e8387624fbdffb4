-- AccountsPage (GET /v1/admin/accounts) orders by (created_at, seq) and resumes after a cursor
-- with WHERE (created_at, seq) > (...): without this index every page read and sorted the
-- whole accounts table. Keys page on api_keys_account (account_id, seq), which 0001 made.
-- Plain CREATE INDEX (migrations run in a transaction): it blocks account writes while it
-- builds, which on an accounts table is a moment.
CREATE INDEX accounts_created ON accounts (created_at, seq);
