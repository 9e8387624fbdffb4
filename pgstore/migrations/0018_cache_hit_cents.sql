-- convsvc schema 18: the price of a cache hit (--cache-hit-cents, docs/cache.md). A job
-- answered from the conversion cache records what it was charged, so the ledger stays exact
-- when the price changes: its month's spend is the sum of its successes' charges (NULL: 1
-- cent, as SPEC.md charges every job), and month_spend.purged_successes now counts the cents
-- of the successes retention deleted (the same number for every job charged 1 cent).
ALTER TABLE jobs ADD COLUMN hit_cents bigint;
