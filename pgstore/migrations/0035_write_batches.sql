-- convsvc schema 35: creates and starts that share a transaction with other requests' writes
-- (issue 34 item 2; pgstore/writebatch.go). A node sends the creates and starts that arrive
-- while its write batches are busy as one pgx batch: one round trip, one implicit
-- transaction and one commit (one WAL flush) for several requests. A batch holds one write
-- an account, in the accounts' order, and each write through these functions locks only its
-- own account's rows (its key's rate_windows row, its job's row, its account's row and
-- event_seqs row), so that two batches take their locks in the same order.
--
-- A transaction of a single request can still hold a row no account owns (a cache hit's
-- cache_entries row, a finish's cache_totals row) and then wait for its account's rows,
-- which a batch may hold while it waits for another account's rows that a third
-- transaction holds while it waits for that shared row: a cycle PostgreSQL would break
-- after deadlock_timeout (1 s). Both functions therefore wait at most 200 ms for a lock
-- (lock_timeout, their SET clause): a batch that waits longer rolls back (55P03), and the
-- node runs each of its writes on its own, as without batches.
--
-- convsvc_start_job_batched is convsvc_start_job_gated (0033) up to its fast path: the gate,
-- then the fast path's one UPDATE. Where the gated function goes on to
-- convsvc_start_job_slow (a cache hit moves cents and takes the cache entry's row; a cap
-- reached, max_queued, a job in another state or missing), this one returns the gate's
-- count, oldest entry and clock with the job's columns and o_notify NULL, having written
-- only the gate's count; the node then runs the start on its own (convsvc_start_job, the
-- gate passed), after the batch's commit.
--
-- convsvc_create_job_batched is convsvc_create_job_gated's in-line case (0030: a job created
-- for its upload, no webhook, no cache lookup), the only create a node puts in a batch.
--
-- Rolling upgrade: new functions; nodes of the previous release do not call them.

CREATE FUNCTION convsvc_start_job_batched(g_hash bytea, g_key text, g_account text, g_presets_only boolean, g_limit integer,
    g_window_us bigint,
    p_account text, p_job text, p_size bigint, p_up_size bigint, p_up_etag text, p_up_version text,
    p_sha text)
RETURNS convsvc_gated_job LANGUAGE plpgsql SET convsvc.defer_notify = 'on' SET lock_timeout = '200ms' AS $$
DECLARE
    o convsvc_gated_job;
    v_count integer; v_oldest timestamptz; v_now timestamptz;
    v_cap bigint; v_reserved bigint; v_spent bigint; v_max bigint;
BEGIN
    -- The gate: convsvc_write_gate's common case (0029), in line.
    UPDATE rate_windows r
        SET times = r.times[width_bucket(clock_timestamp() - g_window_us * interval '1 microsecond', r.times) + 1:]
            || greatest(clock_timestamp(), r.times[cardinality(r.times)])
        WHERE key_id = g_key
            AND r.live_hash = g_hash AND r.live_account = g_account AND r.live_presets_only = g_presets_only
            AND (cardinality(r.times) < 2 OR r.times[cardinality(r.times) - 1] <= r.times[cardinality(r.times)])
            AND cardinality(r.times) - width_bucket(clock_timestamp() - g_window_us * interval '1 microsecond', r.times) < g_limit
        RETURNING cardinality(times), times[1], clock_timestamp() INTO v_count, v_oldest, v_now;
    IF NOT FOUND THEN
        SELECT g.o_count, g.o_oldest, g.o_now INTO v_count, v_oldest, v_now
            FROM convsvc_write_gate(g_hash, g_key, g_account, g_presets_only, g_limit, g_window_us) g;
    END IF;
    -- convsvc_start_job_gated's fast path (0033), in line.
    SELECT a.spend_cap_cents, a.reserved_cents, a.max_queued, coalesce(m.cents, 0) INTO v_cap, v_reserved, v_max, v_spent
        FROM accounts a LEFT JOIN month_spend m ON m.account_id = a.id AND m.month = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM')
        WHERE a.id = p_account;
    IF v_max IS NULL AND v_spent + v_reserved <= v_cap THEN
        UPDATE jobs SET status = 'queued', started_at = now(), upload_size = p_up_size, upload_etag = p_up_etag,
                upload_version_id = p_up_version,
                input_sha256 = nullif(CASE WHEN coalesce(p_sha, '') = '' THEN input_sha256 ELSE p_sha END, ''),
                cache_base = nullif(cache_base, '')
            WHERE id = p_job AND (account_id = p_account AND expires_at > now() AND status = 'created'
                AND input_bytes = p_size
                AND (coalesce(p_sha, '') = '' OR coalesce(input_sha256, '') = '' OR input_sha256 = p_sha)
                AND (coalesce(cache_base, '') = '' OR CASE WHEN coalesce(p_sha, '') = '' THEN coalesce(input_sha256, '') = ''
                    ELSE NOT convsvc_cache_has(cache_base, p_sha) END)) IS TRUE
            RETURNING NULL::integer, NULL::timestamptz, NULL::timestamptz, NULL::text, jobs.* INTO o;
        IF FOUND THEN
            -- The start's payload and the event trigger's, taken at once.
            o.o_notify := coalesce(nullif(current_setting('convsvc.notify', true), '') || ',', '') || 'q:' || o.id;
            PERFORM set_config('convsvc.notify', '', false);
        END IF;
    END IF;
    -- The gate's answer, set last: an UPDATE that took no row left o all NULL.
    o.o_count := v_count;
    o.o_oldest := v_oldest;
    o.o_now := v_now;
    RETURN o;
END $$;

CREATE FUNCTION convsvc_create_job_batched(g_hash bytea, g_key text, g_account text, g_presets_only boolean, g_limit integer,
    g_window_us bigint,
    p_id text, p_account text, p_input_format text, p_target_format text,
    p_input_bytes bigint, p_options bytea, p_retention_us bigint, p_source_url text, p_deliver_to jsonb,
    p_input_sha256 text, p_cache_base text)
RETURNS convsvc_gated_job LANGUAGE plpgsql SET convsvc.defer_notify = 'on' SET lock_timeout = '200ms' AS $$
DECLARE
    o convsvc_gated_job;
    v_count integer; v_oldest timestamptz; v_now timestamptz;
    v_cap bigint; v_reserved bigint; v_max bigint; v_spent bigint;
BEGIN
    IF coalesce(p_input_sha256, '') <> '' AND coalesce(p_cache_base, '') <> '' THEN
        RAISE EXCEPTION 'a create that looks the cache up is not batched' USING ERRCODE = 'CV400';
    END IF;
    -- The gate: convsvc_write_gate's common case (0029), in line.
    UPDATE rate_windows r
        SET times = r.times[width_bucket(clock_timestamp() - g_window_us * interval '1 microsecond', r.times) + 1:]
            || greatest(clock_timestamp(), r.times[cardinality(r.times)])
        WHERE key_id = g_key
            AND r.live_hash = g_hash AND r.live_account = g_account AND r.live_presets_only = g_presets_only
            AND (cardinality(r.times) < 2 OR r.times[cardinality(r.times) - 1] <= r.times[cardinality(r.times)])
            AND cardinality(r.times) - width_bucket(clock_timestamp() - g_window_us * interval '1 microsecond', r.times) < g_limit
        RETURNING cardinality(times), times[1], clock_timestamp() INTO v_count, v_oldest, v_now;
    IF NOT FOUND THEN
        SELECT g.o_count, g.o_oldest, g.o_now INTO v_count, v_oldest, v_now
            FROM convsvc_write_gate(g_hash, g_key, g_account, g_presets_only, g_limit, g_window_us) g;
    END IF;
    -- convsvc_create_job_gated's in-line case (0030).
    UPDATE accounts SET reserved_cents = reserved_cents + 1 WHERE id = p_account
        RETURNING spend_cap_cents, reserved_cents - 1, max_queued INTO v_cap, v_reserved, v_max;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'account % not found', p_account USING ERRCODE = 'CV404';
    END IF;
    SELECT coalesce((SELECT cents FROM month_spend WHERE account_id = p_account
        AND month = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM')), 0) INTO v_spent;
    IF v_spent + v_reserved + 1 > v_cap THEN
        RAISE EXCEPTION '% spent and % reserved of a % cent cap this month', v_spent, v_reserved, v_cap USING ERRCODE = 'CV403';
    END IF;
    INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, options, created_at, expires_at,
            source_url, deliver_to, started_at, input_sha256, cache_base)
        VALUES (p_id, p_account, 'created', p_input_format, p_target_format, p_input_bytes, p_options, now(),
            now() + p_retention_us * interval '1 microsecond', p_source_url, p_deliver_to,
            NULL, nullif(p_input_sha256, ''), nullif(p_cache_base, ''))
        RETURNING v_count, v_oldest, v_now, NULL::text, jobs.* INTO o;
    -- convsvc_take_notifies(), in line.
    o.o_notify := coalesce(current_setting('convsvc.notify', true), '');
    IF o.o_notify <> '' THEN
        PERFORM set_config('convsvc.notify', '', false);
    END IF;
    RETURN o;
END $$;
