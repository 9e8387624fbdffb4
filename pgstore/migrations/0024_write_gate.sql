-- convsvc schema 24: a create's or start's key check and rate count in the transition's own
-- transaction and round trip (issue 34 item 2, "the rate window in the same trip").
--
-- Before, every API write on PostgreSQL cost a statement of its own before its transition:
-- pgstore.Store.AuthenticateWrite, which looks the key up by its secret's hash and counts the
-- write in the key's rate_windows row, in its own autocommit transaction. A node now keeps
-- the keys it has authenticated (pgstore's key cache); for a cached key the same check and
-- count is this function, sent in the transition's batch as its first statement after BEGIN:
--
--   BEGIN; SELECT ... FROM convsvc_write_gate(...); SAVEPOINT convsvc_gate;
--   SELECT ... FROM convsvc_create_job(...) (or convsvc_start_job); COMMIT; convsvc_send_notifies()
--
-- It reads the key in the transaction that counts, so a revocation holds on every node as
-- soon as RevokeKey returns, as with AuthenticateWrite. It raises, having changed nothing
-- (the transaction is rolled back and the transition never runs):
--   CV401 when no live key has this hash, id, account and presets_only (revoked, or not
--         what the node's cache says any more);
--   CVRL0 when the key's window is full; DETAIL is the microseconds until its oldest write
--         leaves the window (the 429's reset), never negative.
-- Otherwise it counts the write as AuthenticateWrite's rateWindowCount does (the times inside
-- the window, then now; refused at p_limit) and returns the count after it, the oldest time
-- inside the window and now, from which the caller computes the remaining writes and reset.
-- When the transition then fails, the caller rolls back to the savepoint and commits, so the
-- write counts once, as before.
--
-- Lock order: the key's rate_windows row is the first lock of a gated transaction, before
-- the job's and the account's rows (pgstore/cache.go's list, 0.); no transaction takes it after
-- any of them (AuthenticateWrite and AllowWrite count in transactions of their own, the purge
-- deletes alone, and Import locks rate_windows first).
CREATE FUNCTION convsvc_write_gate(p_hash bytea, p_key_id text, p_account text, p_presets_only boolean,
    p_limit integer, p_window_us bigint, OUT o_count integer, OUT o_oldest timestamptz, OUT o_now timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    v_reset_us bigint;
BEGIN
    PERFORM 1 FROM api_keys WHERE hash = p_hash AND id = p_key_id AND account_id = p_account
        AND presets_only = p_presets_only AND revoked_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'API key % is not live', p_key_id USING ERRCODE = 'CV401';
    END IF;
    INSERT INTO rate_windows AS r (key_id, times) VALUES (p_key_id, ARRAY[clock_timestamp()])
        ON CONFLICT (key_id) DO UPDATE SET times =
            ARRAY(SELECT t FROM unnest(r.times) t WHERE t > clock_timestamp() - p_window_us * interval '1 microsecond' ORDER BY t) || clock_timestamp()
        WHERE cardinality(ARRAY(SELECT t FROM unnest(r.times) t WHERE t > clock_timestamp() - p_window_us * interval '1 microsecond')) < p_limit
        RETURNING cardinality(times), times[1], clock_timestamp() INTO o_count, o_oldest, o_now;
    IF NOT FOUND THEN
        SELECT greatest(0, floor(extract(epoch FROM (min(t) + p_window_us * interval '1 microsecond' - clock_timestamp())) * 1000000))::bigint
            INTO v_reset_us
            FROM rate_windows, unnest(times) t
            WHERE key_id = p_key_id AND t > clock_timestamp() - p_window_us * interval '1 microsecond';
        RAISE EXCEPTION 'more than % writes in the window', p_limit
            USING ERRCODE = 'CVRL0', DETAIL = coalesce(v_reset_us, 0)::text;
    END IF;
END $$;
