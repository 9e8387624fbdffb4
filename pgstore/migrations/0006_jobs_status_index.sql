-- A page of GET /v1/jobs?status=... (ListJobs) reads the account's jobs in that status, newest
-- first, from this index: without it, the page walked jobs_account over the account's whole
-- history and filtered the status (8,000 jobs read for ?status=running&limit=1). Plain CREATE
-- INDEX (migrations run in a transaction): it blocks job writes while it builds, one pass
-- over the jobs table.
CREATE INDEX jobs_account_status ON jobs (account_id, status, seq DESC);
