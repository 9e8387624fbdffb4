-- convsvc schema 12: jobs claimed fairly across accounts, and per-account queue limits
-- (issue 34). A claim serves the accounts with queued jobs in turn (store.RoundRobin): it
-- finds the next account after the one it served last, and that account's oldest queued job,
-- in this index (ids in byte order, as the Go side compares them). max_running and
-- max_queued are store.Account's limits; NULL is no limit, and a limit is at least 1.
ALTER TABLE accounts
    ADD COLUMN max_running bigint CHECK (max_running >= 1),
    ADD COLUMN max_queued  bigint CHECK (max_queued >= 1);

CREATE INDEX jobs_queue_by_account ON jobs ((account_id COLLATE "C"), started_at, seq) WHERE status = 'queued';
