-- convsvc schema 21: one fair claim walk for both claim functions. 0019's cache-aware
-- convsvc_claim_job had a copy of 0015's walk; both are now thin entry points over
-- convsvc_claim_walk, with the signatures they had (a node of the previous release calls
-- 0015's during a rolling upgrade, and CREATE OR REPLACE keeps a signature's callers working)
-- and the same behaviour, statement for statement: the walk, its locks and their order, its
-- SQLSTATEs. What differs between the two stays in the entry points: how the claim's
-- notification leaves (0015 queues it for convsvc_send_notifies, 0019 sends it with the
-- transaction) and 0019's cache flight.
--
-- And convsvc_cache_key no longer depends on the session's standard_conforming_strings.

-- convsvc_cache_key as 0019 made it (store.CacheKeyOf), with its NUL byte written as
-- decode('00', 'hex'): PL/pgSQL parses a function's body in each session that calls it, and
-- 0019's '\x00' literal is an escape in a session with standard_conforming_strings off, so
-- once a database migrated with it on was set to off (for the database, the role or in the
-- URL), every cache-keyed transition failed with 22021 (TestCacheKey_SQLIsGo). Migration 0019
-- itself cannot be applied with it off.
CREATE OR REPLACE FUNCTION convsvc_cache_key(p_base text, p_sha text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF coalesce(p_base, '') = '' OR coalesce(p_sha, '') = '' THEN
        RETURN NULL;
    END IF;
    RETURN encode(sha256(convert_to(p_base, 'UTF8') || decode('00', 'hex') || convert_to(p_sha, 'UTF8')), 'hex');
END $$;

-- convsvc_claim_walk is the fair claim (store.RoundRobin over the accounts with queued jobs,
-- starting after p_last, in byte order; jobfair.go's claimFair): the oldest queued job of the
-- next account in turn that is under its max_running, locked FOR UPDATE SKIP LOCKED (so
-- claimers on every node pass each other's jobs and no job is claimed twice), goes to running
-- with p_node's lease and is returned; NULL when nothing queued may run. An account with
-- max_running takes its claim lock (pgstore.lockAccountClaims) around the running count and
-- the claim, so the limit holds across nodes. With p_lock_keyed, the account's row of a job
-- with a cache key is locked before its status changes (cache.go's lock order: the caller
-- then runs the key's flight, which may move the account's cents). A job past its expires_at
-- at the head of an account's queue is left to Go (CVFB0: it fails with webhook events).
CREATE FUNCTION convsvc_claim_walk(p_last text, p_node text, p_lease_us bigint, p_lock_keyed boolean)
RETURNS jobs LANGUAGE plpgsql AS $$
DECLARE
    v_after text := p_last COLLATE "C"; v_wrapped boolean := false; v_acct text; v_max bigint; v_running bigint; v_job jobs;
BEGIN
    LOOP
        SELECT * INTO v_job FROM jobs WHERE status = 'queued' AND account_id COLLATE "C" = (
                SELECT account_id COLLATE "C" FROM jobs WHERE status = 'queued' AND account_id COLLATE "C" > v_after
                ORDER BY account_id COLLATE "C" LIMIT 1)
            ORDER BY account_id COLLATE "C", started_at, seq FOR UPDATE SKIP LOCKED LIMIT 1;
        IF NOT FOUND THEN
            -- Nothing queued after v_after, or every queued job of the next account is being
            -- claimed: which one says the next account's id.
            SELECT account_id INTO v_acct FROM jobs WHERE status = 'queued' AND account_id COLLATE "C" > v_after
                ORDER BY account_id COLLATE "C" LIMIT 1;
            IF NOT FOUND THEN
                v_acct := '';
            END IF;
        ELSE
            v_acct := v_job.account_id;
            SELECT max_running INTO v_max FROM accounts WHERE id = v_acct;
            IF p_lock_keyed AND convsvc_cache_key(v_job.cache_base, v_job.input_sha256) IS NOT NULL THEN
                PERFORM 1 FROM accounts WHERE id = v_acct FOR UPDATE; -- pgstore.lockAccount
            END IF;
            v_running := NULL;
            IF v_max IS NOT NULL THEN
                PERFORM pg_advisory_xact_lock(1668677636, hashtext(v_acct)); -- pgstore.lockAccountClaims
                SELECT count(*) INTO v_running FROM jobs WHERE account_id = v_acct AND status = 'running';
            END IF;
            IF v_running IS NULL OR v_running < v_max THEN
                IF v_job.expires_at <= now() THEN
                    RAISE EXCEPTION 'expired job at the head of the queue' USING ERRCODE = 'CVFB0';
                END IF;
                UPDATE jobs SET status = 'running', attempt = attempt + 1, lease_owner = p_node,
                        lease_expires_at = clock_timestamp() + p_lease_us * interval '1 microsecond'
                    WHERE id = v_job.id RETURNING * INTO v_job;
                RETURN v_job;
            END IF;
            -- At its max_running: its job stays queued (locked until this transaction ends).
        END IF;
        IF v_acct = '' OR (v_wrapped AND v_acct COLLATE "C" > p_last COLLATE "C") THEN
            IF v_wrapped OR p_last = '' THEN
                RETURN NULL;
            END IF;
            v_after := '';
            v_wrapped := true;
        ELSE
            v_after := v_acct;
        END IF;
    END LOOP;
END $$;

-- 0015's convsvc_claim_job (the previous release's nodes call it): the walk, the job's
-- notification queued for convsvc_send_notifies. A job with a cache key is only claimed; the
-- caller runs its flight in a transaction of its own (FinishFromCache).
CREATE OR REPLACE FUNCTION convsvc_claim_job(p_last text, p_node text, p_lease_us bigint)
RETURNS SETOF jobs LANGUAGE plpgsql AS $$
DECLARE
    v_job jobs := convsvc_claim_walk(p_last, p_node, p_lease_us, false);
BEGIN
    IF v_job.id IS NOT NULL THEN
        PERFORM convsvc_queue_notify('j:' || v_job.id);
        RETURN NEXT v_job;
    END IF;
END $$;

-- 0019's convsvc_claim_job: the walk, with the account's row of a job with a cache key locked
-- before the status change, the notification sent with the transaction, then the key's flight
-- (convsvc_cache_flight): a hit answers the job at once (o_job succeeded: the caller claims
-- again, in a transaction of its own), a twin converting sets o_wait_for, else the job
-- becomes the key's converter.
CREATE OR REPLACE FUNCTION convsvc_claim_job(p_last text, p_node text, p_lease_us bigint, p_price bigint, p_deliveries_in_go boolean,
    OUT o_job jobs, OUT o_wait_for text)
RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE
    v_job jobs := convsvc_claim_walk(p_last, p_node, p_lease_us, true); v_flight record;
BEGIN
    IF v_job.id IS NULL THEN
        RETURN;
    END IF;
    PERFORM pg_notify('convsvc', 'j:' || v_job.id);
    o_job := v_job;
    IF convsvc_cache_key(v_job.cache_base, v_job.input_sha256) IS NOT NULL THEN
        SELECT * INTO v_flight FROM convsvc_cache_flight(v_job, p_price, p_deliveries_in_go);
        o_job := v_flight.o_job;
        o_wait_for := v_flight.o_wait_for;
    END IF;
    RETURN NEXT;
END $$;
