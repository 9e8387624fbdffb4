-- convsvc schema 26: the rate window counted at the database's speed (issue 34 item 2).
--
-- Migration 0024's convsvc_write_gate, and AuthenticateWrite and AllowWrite in Go, counted a
-- write in the key's rate_windows row with ARRAY(SELECT t FROM unnest(times) t WHERE t >
-- clock_timestamp() - window ORDER BY t), twice (once for the limit, once for the new array):
-- clock_timestamp() is volatile, so the cut-off was computed again for every entry, and the
-- entries were unnested and sorted on every write; it was most of the gate's time
-- (docs/benchmarks.md, the scale-out section's "where the time goes"). The window is the same:
--
--   an entry counts while t > now - window; a write is refused when the window already holds
--   p_limit entries (the 121st write inside any rolling 60 s), and then nothing changes;
--   the refusal's reset (CVRL0's DETAIL, convsvc_count_write's o_reset_us) is the microseconds
--   until the oldest counted entry leaves, floor(oldest + window - now), never negative.
--
-- How it is counted now: the array is kept sorted, so width_bucket(cut, times) (a binary
-- search: how many entries are <= cut) says which entries have left, and the kept ones are the
-- slice times[n+1:]. A write is one plain UPDATE of the row (INSERT only for a key's first
-- write: INSERT ... ON CONFLICT DO UPDATE cost a third more per call), HOT: times is not
-- indexed, and fillfactor 50 leaves room on each page for the row's next version (at 100,
-- 12-17% of the updates were not HOT and the 600-row table grew to 11-17 MB in the pgbench
-- runs; at 50 all were, 1.7-2.2 MB). The clock is read a fixed number of times in the
-- statement (for the limit, for the cut, for the new entry, for o_now), each after the row's
-- previous version committed: a plain UPDATE that finds the row changed under it evaluates
-- its WHERE and SET again on the new version (EvalPlanQual). A clock read once before the
-- statement, into a variable, would be older than the entry of a write it then waited behind.
--
-- Sorted, even if the clock steps back: a write is stored at greatest(now, the last entry).
-- So an entry's time is never before the previous entry's: after the database's clock stepped
-- back, a write is counted as made at the previous entry's time and leaves the window with it,
-- up to the step later than by its own clock. The window never holds more than p_limit entries
-- by the stored times; a key may be refused up to the step longer, never let through more.
-- Duplicate times are entries like any other (width_bucket counts each).
--
-- Rolling upgrade: nodes of the previous release count in the same rows with 0024's SQL,
-- which sorts the entries it keeps and appends clock_timestamp(): its arrays are sorted
-- except, after the clock stepped back, for their last entry. The binary search is used only
-- when the last two entries are in order; otherwise (and for a key's first write, and for a
-- refusal) convsvc_count_write's second part locks the row, reads the clock, keeps the entries
-- > cut, sorted (as 0024 did), and appends greatest(now, the last of them). Nothing writes any
-- other order; the binary search trusts an array whose last two entries are in order (a check
-- of every pair cost 25 us a call in pgbench, half the gain).
--
-- Lock order as 0024's: the key's rate_windows row is the first lock of a gated transaction.
--
-- convsvc_count_write counts one write of a key, without the key check: AuthenticateWrite and
-- AllowWrite call it, and the gate when its own UPDATE did not count. A refused write returns
-- o_count NULL and o_reset_us, no exception (so that AuthenticateWrite still returns the key in
-- the same round trip). o_oldest is the oldest entry of the window (after the write, if
-- counted), o_now the clock read for it.
ALTER TABLE rate_windows SET (fillfactor = 50);

CREATE FUNCTION convsvc_count_write(p_key_id text, p_limit integer, p_window_us bigint,
    OUT o_count integer, OUT o_oldest timestamptz, OUT o_now timestamptz, OUT o_reset_us bigint)
LANGUAGE plpgsql STRICT AS $$
DECLARE
    v_times timestamptz[];
BEGIN
    -- The common case: a sorted array with room (the same statement as convsvc_write_gate's).
    UPDATE rate_windows r
        SET times = r.times[width_bucket(clock_timestamp() - p_window_us * interval '1 microsecond', r.times) + 1:]
            || greatest(clock_timestamp(), r.times[cardinality(r.times)])
        WHERE key_id = p_key_id
            AND (cardinality(r.times) < 2 OR r.times[cardinality(r.times) - 1] <= r.times[cardinality(r.times)])
            AND cardinality(r.times) - width_bucket(clock_timestamp() - p_window_us * interval '1 microsecond', r.times) < p_limit
        RETURNING cardinality(times), times[1], clock_timestamp() INTO o_count, o_oldest, o_now;
    IF FOUND THEN
        RETURN;
    END IF;
    -- No row yet, a full window, or an array out of order: lock the row, or make it.
    LOOP
        SELECT times INTO v_times FROM rate_windows WHERE key_id = p_key_id FOR NO KEY UPDATE;
        EXIT WHEN FOUND;
        o_now := clock_timestamp();
        INSERT INTO rate_windows (key_id, times) VALUES (p_key_id, ARRAY[o_now]) ON CONFLICT (key_id) DO NOTHING;
        IF FOUND THEN
            o_count := 1;
            o_oldest := o_now;
            RETURN;
        END IF;
        -- Another transaction made it first: lock that one.
    END LOOP;
    o_now := clock_timestamp();
    v_times := ARRAY(SELECT t FROM unnest(v_times) t WHERE t > o_now - p_window_us * interval '1 microsecond' ORDER BY t);
    o_oldest := v_times[1];
    IF cardinality(v_times) >= p_limit THEN
        o_reset_us := greatest(0, floor(extract(epoch FROM v_times[1] + p_window_us * interval '1 microsecond' - o_now) * 1000000))::bigint;
        RETURN;
    END IF;
    v_times := v_times || greatest(o_now, v_times[cardinality(v_times)]);
    UPDATE rate_windows SET times = v_times WHERE key_id = p_key_id;
    o_count := cardinality(v_times);
    o_oldest := v_times[1];
END $$;

-- Same signature, SQLSTATEs and results as 0024's. The common case's UPDATE is in line: a
-- nested call of convsvc_count_write for it cost 20 us more per call than the UPDATE itself.
CREATE OR REPLACE FUNCTION convsvc_write_gate(p_hash bytea, p_key_id text, p_account text, p_presets_only boolean,
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
    UPDATE rate_windows r
        SET times = r.times[width_bucket(clock_timestamp() - p_window_us * interval '1 microsecond', r.times) + 1:]
            || greatest(clock_timestamp(), r.times[cardinality(r.times)])
        WHERE key_id = p_key_id
            AND (cardinality(r.times) < 2 OR r.times[cardinality(r.times) - 1] <= r.times[cardinality(r.times)])
            AND cardinality(r.times) - width_bucket(clock_timestamp() - p_window_us * interval '1 microsecond', r.times) < p_limit
        RETURNING cardinality(times), times[1], clock_timestamp() INTO o_count, o_oldest, o_now;
    IF FOUND THEN
        RETURN;
    END IF;
    SELECT c.o_count, c.o_oldest, c.o_now, c.o_reset_us INTO o_count, o_oldest, o_now, v_reset_us
        FROM convsvc_count_write(p_key_id, p_limit, p_window_us) c;
    IF o_count IS NULL THEN
        RAISE EXCEPTION 'more than % writes in the window', p_limit
            USING ERRCODE = 'CVRL0', DETAIL = v_reset_us::text;
    END IF;
END $$;
