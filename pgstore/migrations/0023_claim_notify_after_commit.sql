-- convsvc schema 23: the claim functions defer their notifications as 0020 made the create,
-- start and finish functions do. A claim changes the job's status, so the event trigger
-- notified inside its transaction (convsvc_notify with the defer flag off), and 0019's entry
-- point (0021's) called pg_notify itself: every claim's commit took NOTIFY's cluster-wide
-- lock through its WAL flush, so claims (and with them the conversions a fleet starts a
-- second) committed one flush at a time. Every caller of either claim function, of this
-- release and the previous ones, sends BEGIN, the call, COMMIT and convsvc_send_notifies() in
-- one batch, so the payloads queued here leave right after the commit.

-- 0019's convsvc_claim_job as 0021 left it, its job payload queued (convsvc_notify) instead
-- of sent in the transaction.
CREATE OR REPLACE FUNCTION convsvc_claim_job(p_last text, p_node text, p_lease_us bigint, p_price bigint, p_deliveries_in_go boolean,
    OUT o_job jobs, OUT o_wait_for text)
RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE
    v_job jobs := convsvc_claim_walk(p_last, p_node, p_lease_us, true); v_flight record;
BEGIN
    IF v_job.id IS NULL THEN
        RETURN;
    END IF;
    PERFORM convsvc_notify('j:' || v_job.id);
    o_job := v_job;
    IF convsvc_cache_key(v_job.cache_base, v_job.input_sha256) IS NOT NULL THEN
        SELECT * INTO v_flight FROM convsvc_cache_flight(v_job, p_price, p_deliveries_in_go);
        o_job := v_flight.o_job;
        o_wait_for := v_flight.o_wait_for;
    END IF;
    RETURN NEXT;
END $$;

-- Both claim functions run with the defer flag on, so the event trigger (and the cache
-- flight's finish, for a hit at claim) queue their payloads too.
ALTER FUNCTION convsvc_claim_job(text, text, bigint)
    SET convsvc.defer_notify = 'on';
ALTER FUNCTION convsvc_claim_job(text, text, bigint, bigint, boolean)
    SET convsvc.defer_notify = 'on';
