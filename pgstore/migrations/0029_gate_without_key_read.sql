-- convsvc schema 29: less PostgreSQL CPU per create and start (issue 34 item 2), measured by
-- bench/pgcallinstr.sh (valgrind on the backend that serves pgbench's prepared, pipelined
-- batches, docs/benchmarks.md). What a gate or a key write answers is unchanged.
--
-- 1. A write gate's common case is one statement: the rate window's UPDATE, without a read
--    of api_keys. 0024/0026's gate first read the key's row (hash, id, account, presets_only,
--    not revoked: about 40,000 instructions a call, two calls a job), then counted. Now the
--    key's rate_windows row remembers the key it was last checked against (live_hash,
--    live_account, live_presets_only), and the gate's UPDATE counts only when the call's
--    key is that key. The row forgets (the three columns NULL) whenever the key's api_keys
--    row is updated or deleted (a revocation, Import), by a trigger, so a node of any
--    release that revokes a key makes every node's next gate of it check again.
--    Anything else (no row yet, a row not checked or checked against another key, a full
--    window, an array out of order) takes the slow path: count the write with
--    convsvc_count_write, which locks the key's row (or makes it) first, then read the key
--    (a statement begun after the lock, so it sees every revocation committed before it),
--    then remember the key. A refusal raises after the count, and its rollback takes the
--    count back, as before; CV401 still wins over CVRL0.
--
--    Why a remembered key cannot outlive its revocation: a revocation updates api_keys and
--    then, in the same transaction, the key's rate_windows row (inserting it when there is
--    none, so that it meets a gate that is making it: the insert waits for that gate's
--    transaction). A gate that holds the row's lock first is ordered before the revocation:
--    its read of the key saw it live, and the revocation's write of the row, after the
--    gate's commit, forgets the key. A revocation that holds the row's lock first is
--    ordered before the gate: the gate's UPDATE waits, then finds the row forgotten and
--    takes the slow path, whose read sees the revocation. Lock order: a revocation takes the
--    api_keys row and then the rate_windows row; a gate takes the rate_windows row and only
--    reads api_keys; Import locks rate_windows first, as before.
ALTER TABLE rate_windows
    ADD COLUMN live_hash bytea,
    ADD COLUMN live_account text,
    ADD COLUMN live_presets_only boolean;

CREATE FUNCTION convsvc_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO rate_windows (key_id, times) VALUES (OLD.id, '{}')
        ON CONFLICT (key_id) DO UPDATE SET live_hash = NULL, live_account = NULL, live_presets_only = NULL;
    RETURN NULL;
END $$;
CREATE TRIGGER api_keys_changed AFTER UPDATE OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION convsvc_key_changed();

-- Same signature, SQLSTATEs and results as 0026's; rows made before this migration are
-- remembered by none, so each key's first gate after it takes the slow path once.
CREATE OR REPLACE FUNCTION convsvc_write_gate(p_hash bytea, p_key_id text, p_account text, p_presets_only boolean,
    p_limit integer, p_window_us bigint, OUT o_count integer, OUT o_oldest timestamptz, OUT o_now timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    v_reset_us bigint;
BEGIN
    UPDATE rate_windows r
        SET times = r.times[width_bucket(clock_timestamp() - p_window_us * interval '1 microsecond', r.times) + 1:]
            || greatest(clock_timestamp(), r.times[cardinality(r.times)])
        WHERE key_id = p_key_id
            AND r.live_hash = p_hash AND r.live_account = p_account AND r.live_presets_only = p_presets_only
            AND (cardinality(r.times) < 2 OR r.times[cardinality(r.times) - 1] <= r.times[cardinality(r.times)])
            AND cardinality(r.times) - width_bucket(clock_timestamp() - p_window_us * interval '1 microsecond', r.times) < p_limit
        RETURNING cardinality(times), times[1], clock_timestamp() INTO o_count, o_oldest, o_now;
    IF FOUND THEN
        RETURN;
    END IF;
    SELECT c.o_count, c.o_oldest, c.o_now, c.o_reset_us INTO o_count, o_oldest, o_now, v_reset_us
        FROM convsvc_count_write(p_key_id, p_limit, p_window_us) c;
    PERFORM 1 FROM api_keys WHERE hash = p_hash AND id = p_key_id AND account_id = p_account
        AND presets_only = p_presets_only AND revoked_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'API key % is not live', p_key_id USING ERRCODE = 'CV401';
    END IF;
    IF o_count IS NULL THEN
        RAISE EXCEPTION 'more than % writes in the window', p_limit
            USING ERRCODE = 'CVRL0', DETAIL = v_reset_us::text;
    END IF;
    UPDATE rate_windows SET live_hash = p_hash, live_account = p_account, live_presets_only = p_presets_only
        WHERE key_id = p_key_id AND (live_hash = p_hash AND live_account = p_account AND live_presets_only = p_presets_only) IS NOT TRUE;
END $$;

-- 2. accounts' four CHECK constraints become one call, as 0027 did for jobs: PostgreSQL 15
--    reads each CHECK's stored tree back (stringToNode) and compiles it in every INSERT and
--    UPDATE of the table, and a create updates its account's row (the reserved cent). The
--    function is the four constraints' conjunction: a row passes when none of them is false.
--    Violations are still SQLSTATE 23514 on accounts, now named accounts_row_check (nothing
--    reads the names). 23,000 instructions fewer per create.
CREATE FUNCTION convsvc_account_row_ok(p_spend_cap_cents bigint, p_reserved_cents bigint, p_max_running bigint,
    p_max_queued bigint) RETURNS boolean LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN p_spend_cap_cents >= 0 AND p_reserved_cents >= 0 AND p_max_running >= 1 AND p_max_queued >= 1;
END $$;

ALTER TABLE accounts
    DROP CONSTRAINT accounts_spend_cap_cents_check,
    DROP CONSTRAINT accounts_reserved_cents_check,
    DROP CONSTRAINT accounts_max_running_check,
    DROP CONSTRAINT accounts_max_queued_check,
    ADD CONSTRAINT accounts_row_check CHECK (convsvc_account_row_ok(spend_cap_cents, reserved_cents, max_running, max_queued));
