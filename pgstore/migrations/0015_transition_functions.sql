-- convsvc schema 15: the hot job transitions as server-side functions, so each is one round
-- trip (issue 34 item 2). Each is called as the one statement of its transaction, so its state
-- change and its spend movement commit together, and an error leaves nothing behind. They do
-- exactly what pgstore's Go transactions do (jobs.go, jobfair.go) for the common case; for a
-- case they leave to Go they raise SQLSTATE CVFB0 having changed nothing, and pgstore runs its
-- Go transaction instead (CVWH0: convsvc_finish_job's webhook deliveries, below). The other
-- SQLSTATEs are the caller's errors, which pgstore maps to store's sentinels with the message
-- as given here:
--   CV404 store.ErrNotFound, CV403 store.ErrLimitReached, CV429 store.ErrQueueFull,
--   CV409 store.ErrInvalidState, CV400 store.ErrInvalidArgument.

-- Notifications go out after the commit, not inside the transaction: a transaction that calls
-- NOTIFY takes a lock global to the database cluster at commit and holds it through its WAL
-- flush, so with fsync on every notifying transition would wait for every other one's flush
-- in turn. A function queues its payloads in the session's convsvc.notify setting (a
-- transaction that fails takes them back with it); pgstore sends BEGIN, the function, COMMIT
-- and convsvc_send_notifies() in one batch, so they leave in the same round trip, in a
-- transaction of their own that writes nothing and waits for no flush.
CREATE FUNCTION convsvc_queue_notify(p_payload text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('convsvc.notify',
        coalesce(nullif(current_setting('convsvc.notify', true), '') || ',', '') || p_payload, false);
END $$;

CREATE FUNCTION convsvc_send_notifies() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_payloads text := current_setting('convsvc.notify', true);
BEGIN
    IF v_payloads IS NOT NULL AND v_payloads <> '' THEN
        PERFORM pg_notify('convsvc', p) FROM unnest(string_to_array(v_payloads, ',')) AS p;
        PERFORM set_config('convsvc.notify', '', false);
    END IF;
END $$;

-- convsvc_lock_account_room locks the account's row, then reads this month's spend (a later
-- statement, so it sees every finish that committed while it waited for the lock: pgstore's
-- lockAccountSpend), and refuses with CV403 unless p_more more cents fit under the cap beside
-- the spend and the reservations. It returns the account's max_queued.
CREATE FUNCTION convsvc_lock_account_room(p_account text, p_more bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_cap bigint; v_reserved bigint; v_spent bigint; v_max bigint;
BEGIN
    SELECT spend_cap_cents, reserved_cents, max_queued INTO v_cap, v_reserved, v_max FROM accounts WHERE id = p_account FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'account % not found', p_account USING ERRCODE = 'CV404';
    END IF;
    SELECT coalesce((SELECT cents FROM month_spend WHERE account_id = p_account
        AND month = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM')), 0) INTO v_spent;
    IF v_spent + v_reserved + p_more > v_cap THEN
        RAISE EXCEPTION '% spent and % reserved of a % cent cap this month', v_spent, v_reserved, v_cap USING ERRCODE = 'CV403';
    END IF;
    RETURN v_max;
END $$;

-- convsvc_create_job: CreateJob without an Idempotency-Key. Locks the account, checks the cap
-- (and max_queued when the job is queued at create: a source_url job), reserves the cent,
-- inserts the job and its webhook_url.
CREATE FUNCTION convsvc_create_job(p_id text, p_account text, p_status text, p_input_format text, p_target_format text,
    p_input_bytes bigint, p_options bytea, p_retention_us bigint, p_source_url text, p_deliver_to jsonb, p_webhook_url text)
RETURNS jobs LANGUAGE plpgsql AS $$
DECLARE
    v_queued bigint; v_max bigint; v_job jobs;
BEGIN
    v_max := convsvc_lock_account_room(p_account, 1);
    IF p_status = 'queued' AND v_max IS NOT NULL THEN
        SELECT count(*) INTO v_queued FROM jobs WHERE account_id = p_account AND status = 'queued';
        IF v_queued + 1 > v_max THEN
            RAISE EXCEPTION '% jobs queued, max_queued is %', v_queued, v_max USING ERRCODE = 'CV429';
        END IF;
    END IF;
    UPDATE accounts SET reserved_cents = reserved_cents + 1 WHERE id = p_account;
    INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, options, created_at, expires_at,
            source_url, deliver_to, started_at)
        VALUES (p_id, p_account, p_status, p_input_format, p_target_format, p_input_bytes, p_options, now(),
            now() + p_retention_us * interval '1 microsecond', p_source_url, p_deliver_to,
            CASE WHEN p_status = 'queued' THEN now() END)
        RETURNING * INTO v_job;
    IF p_status = 'queued' THEN
        PERFORM convsvc_queue_notify('j:' || v_job.id);
        PERFORM convsvc_queue_notify('q:' || v_job.id);
    END IF;
    IF p_webhook_url <> '' THEN
        INSERT INTO job_webhooks (job_id, url)
            SELECT v_job.id, p_webhook_url WHERE EXISTS (SELECT 1 FROM webhook_signing_secrets WHERE account_id = p_account);
        IF NOT FOUND THEN
            RAISE EXCEPTION 'webhook_url needs the account''s webhook signing secret: make it with POST /v1/webhook-secret (`convsvc webhooks rotate-secret`) or, as an operator, `convsvc admin webhooks secret %`', p_account
                USING ERRCODE = 'CV400';
        END IF;
    END IF;
    RETURN v_job;
END $$;

-- convsvc_start_job: StartJob of a created job whose upload has input_bytes bytes (a size
-- mismatch, which cancels the job, is left to Go). A job not in state created is returned as
-- it is.
CREATE FUNCTION convsvc_start_job(p_account text, p_job text, p_size bigint, p_up_size bigint, p_up_etag text, p_up_version text)
RETURNS jobs LANGUAGE plpgsql AS $$
DECLARE
    v_queued bigint; v_max bigint; v_job jobs;
BEGIN
    SELECT * INTO v_job FROM jobs WHERE id = p_job AND account_id = p_account AND expires_at > now() FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % not found', p_job USING ERRCODE = 'CV404';
    END IF;
    IF v_job.status <> 'created' THEN
        RETURN v_job;
    END IF;
    IF p_size <> v_job.input_bytes THEN
        RAISE EXCEPTION 'size mismatch' USING ERRCODE = 'CVFB0';
    END IF;
    v_max := convsvc_lock_account_room(p_account, 0);
    IF v_max IS NOT NULL THEN
        SELECT count(*) INTO v_queued FROM jobs WHERE account_id = p_account AND status = 'queued';
        IF v_queued >= v_max THEN
            RAISE EXCEPTION '% jobs queued, max_queued is %', v_queued, v_max USING ERRCODE = 'CV429';
        END IF;
    END IF;
    UPDATE jobs SET status = 'queued', started_at = now(), upload_size = p_up_size, upload_etag = p_up_etag,
            upload_version_id = p_up_version
        WHERE id = p_job RETURNING * INTO v_job;
    PERFORM convsvc_queue_notify('j:' || v_job.id);
    PERFORM convsvc_queue_notify('q:' || v_job.id);
    RETURN v_job;
END $$;

-- convsvc_claim_job: ClaimJob's fair walk (store.RoundRobin over the accounts with queued
-- jobs, starting after p_last, in byte order; jobfair.go's claimFair): the oldest queued job
-- of the next account in turn that is under its max_running, locked FOR UPDATE SKIP LOCKED,
-- goes to running with this node's lease. No row: nothing queued may run. A job past its
-- expires_at at the head of an account's queue is left to Go (it fails with webhook events).
CREATE FUNCTION convsvc_claim_job(p_last text, p_node text, p_lease_us bigint)
RETURNS SETOF jobs LANGUAGE plpgsql AS $$
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
                PERFORM convsvc_queue_notify('j:' || v_job.id);
                RETURN NEXT v_job;
                RETURN;
            END IF;
            -- At its max_running: its job stays queued (locked until this transaction ends).
        END IF;
        IF v_acct = '' OR (v_wrapped AND v_acct COLLATE "C" > p_last COLLATE "C") THEN
            IF v_wrapped OR p_last = '' THEN
                RETURN;
            END IF;
            v_after := '';
            v_wrapped := true;
        ELSE
            v_after := v_acct;
        END IF;
    END LOOP;
END $$;

-- convsvc_finish_job: FinishJob of a running attempt that is not past its expires_at and
-- finishes no batch: success turns the reservation into this month's spend, failure releases
-- it. The other cases are left to Go. A job no longer running that attempt is CV409. A job
-- with webhook destinations (an enabled endpoint of its account, or its webhook_url) raises
-- CVWH0 unless p_deliveries_in_go says the caller records their deliveries (Go encodes the
-- job for them) in the same transaction, after this call.
CREATE FUNCTION convsvc_finish_job(p_job text, p_attempt integer, p_status text, p_code text, p_message text, p_reason text,
    p_out_bytes bigint, p_out_sha256 text, p_out_warnings text, p_out_verified boolean, p_deliveries_in_go boolean)
RETURNS jobs LANGUAGE plpgsql AS $$
DECLARE
    v_job jobs; v_unfinished integer;
BEGIN
    SELECT * INTO v_job FROM jobs WHERE id = p_job FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job % not found', p_job USING ERRCODE = 'CV404';
    END IF;
    IF v_job.status <> 'running' OR v_job.attempt <> p_attempt THEN
        RAISE EXCEPTION 'job is % (attempt %), not running attempt %', v_job.status, v_job.attempt, p_attempt USING ERRCODE = 'CV409';
    END IF;
    IF v_job.expires_at <= now() THEN
        RAISE EXCEPTION 'expired: left to Go' USING ERRCODE = 'CVFB0';
    END IF;
    -- A job with a cache key (0016's cache_base and input_sha256): Go stores its output in the
    -- cache and ends its flight in the finish's own transaction, so a twin waiting for it never
    -- sees it finished without the entry (and converts again).
    IF coalesce(v_job.cache_base, '') <> '' AND coalesce(v_job.input_sha256, '') <> '' THEN
        RAISE EXCEPTION 'cache key: left to Go' USING ERRCODE = 'CVFB0';
    END IF;
    IF NOT p_deliveries_in_go AND (
        EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.account_id = v_job.account_id AND e.disabled_at IS NULL)
        OR EXISTS (SELECT 1 FROM job_webhooks w WHERE w.job_id = p_job)) THEN
        RAISE EXCEPTION 'webhook deliveries: recorded by Go' USING ERRCODE = 'CVWH0';
    END IF;
    UPDATE accounts SET reserved_cents = reserved_cents - 1 WHERE id = v_job.account_id AND reserved_cents >= 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger broken: account % has no reservation for job %', v_job.account_id, p_job;
    END IF;
    IF p_status = 'succeeded' THEN
        INSERT INTO month_spend (account_id, month, cents) VALUES (v_job.account_id, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM'), 1)
            ON CONFLICT (account_id, month) DO UPDATE SET cents = month_spend.cents + 1;
    END IF;
    UPDATE jobs SET status = p_status, finished_at = now(), error_code = p_code,
            error_message = CASE WHEN p_message = '' THEN error_message ELSE p_message END,
            output_bytes = p_out_bytes, output_sha256 = p_out_sha256,
            output_attempt = CASE WHEN p_status = 'succeeded' THEN attempt END,
            output_warnings = p_out_warnings,
            error_reason = CASE WHEN p_status = 'succeeded' THEN error_reason ELSE p_reason END,
            output_verified = p_out_verified, lease_owner = NULL, lease_expires_at = NULL
        WHERE id = p_job RETURNING * INTO v_job;
    -- A batch's job: count it finished; the finish that completes the batch (its
    -- batch.finished event carries a snapshot Go makes) is left to Go.
    UPDATE batches b SET unfinished = b.unfinished - 1
        FROM batch_jobs bj WHERE bj.job_id = p_job AND b.id = bj.batch_id AND b.unfinished > 0
        RETURNING b.unfinished INTO v_unfinished;
    IF FOUND AND v_unfinished = 0 THEN
        RAISE EXCEPTION 'finishes its batch' USING ERRCODE = 'CVFB0';
    END IF;
    PERFORM convsvc_queue_notify('j:' || v_job.id);
    RETURN v_job;
END $$;
