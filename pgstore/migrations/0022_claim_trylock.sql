-- convsvc schema 22: claims no longer wait for each other at capped accounts. 0021's walk held
-- the claim lock of each account at max_running that it passed (and the account's row, when
-- the job it looked at had a cache key) and waited for the next one's, so two claims crossing
-- two capped accounts in opposite orders deadlocked. Only convsvc_claim_walk changes
-- (CREATE OR REPLACE, its signature kept); both convsvc_claim_job entry points call it.

-- convsvc_claim_walk as 0021 made it (the fair claim: store.RoundRobin over the accounts with
-- queued jobs after p_last, in byte order; jobfair.go's claimFair), with two changes so that a
-- claim never waits for another claim while it holds what that claim may wait for:
--
--  - An account with max_running takes its claim lock (pgstore.lockAccountClaims) with
--    pg_try_advisory_xact_lock. When another claim holds it, that claim is deciding on the
--    account right now (taking its job, or passing it at its limit): this one passes it too,
--    as it passes an account at its limit. The lock still makes the running count and the
--    claim one step (only its holder counts and claims), so max_running holds across nodes;
--    the account is served by that claim or the next.
--  - With p_lock_keyed, the account's row of a job with a cache key is locked once the walk
--    takes that job (under its limit, not expired), before its status changes (cache.go's lock
--    order), and never for a job the walk passes.
--
-- 0021's walk kept the claim lock (blocking) and the row of every capped account it passed,
-- so two claims passing two such accounts in opposite orders (one wrapped around) waited for
-- each other until PostgreSQL aborted one (40P01, after deadlock_timeout).
-- Everything else is 0021's: the jobs FOR UPDATE SKIP LOCKED, the order, the wrap-around, the
-- expired head left to Go (CVFB0). The entry points (0015's and 0019's convsvc_claim_job, as
-- 0021 made them) call this function and are unchanged.
CREATE OR REPLACE FUNCTION convsvc_claim_walk(p_last text, p_node text, p_lease_us bigint, p_lock_keyed boolean)
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
            v_running := NULL;
            IF v_max IS NOT NULL THEN
                IF pg_try_advisory_xact_lock(1668677636, hashtext(v_acct)) THEN -- pgstore.lockAccountClaims
                    SELECT count(*) INTO v_running FROM jobs WHERE account_id = v_acct AND status = 'running';
                ELSE
                    v_running := v_max; -- another claim is deciding on this account: passed, as at its limit
                END IF;
            END IF;
            IF v_running IS NULL OR v_running < v_max THEN
                IF v_job.expires_at <= now() THEN
                    RAISE EXCEPTION 'expired job at the head of the queue' USING ERRCODE = 'CVFB0';
                END IF;
                IF p_lock_keyed AND convsvc_cache_key(v_job.cache_base, v_job.input_sha256) IS NOT NULL THEN
                    PERFORM 1 FROM accounts WHERE id = v_acct FOR UPDATE; -- pgstore.lockAccount
                END IF;
                UPDATE jobs SET status = 'running', attempt = attempt + 1, lease_owner = p_node,
                        lease_expires_at = clock_timestamp() + p_lease_us * interval '1 microsecond'
                    WHERE id = v_job.id RETURNING * INTO v_job;
                RETURN v_job;
            END IF;
            -- At its max_running, or another claim's: its job stays queued (locked until this
            -- transaction ends, as is the claim lock when this claim took it).
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
