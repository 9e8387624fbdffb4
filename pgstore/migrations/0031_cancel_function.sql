-- convsvc schema 31: a cancel is one call (issue 34 item 2: one round trip per request where
-- the transaction allows it). POST /v1/jobs/{id}/cancel ran pgstore's Go transaction: BEGIN,
-- the job's lock, the account's reservation, the job's update, the webhook and batch
-- bookkeeping, the notifications and COMMIT, each a round trip of its own.
--
-- convsvc_cancel_job does the same steps, in the same lock order (the job's row, then the
-- account's), as the Go transaction, and returns the job as the cancel left it with whether
-- it changed it (o_changed: false for a job that was cancelled already, which the cancel
-- returns as it is, and which the store does not hand to its FinishHook again). It leaves to
-- Go what finish_common leaves to Go for a worker's finish: the webhook deliveries of a job
-- with destinations (CVWH0: the call runs again with p_deliveries_in_go and Go records them in
-- the same transaction) and a cancel that finishes its batch (CVFB0: the Go transaction, whose
-- batch.finished event carries a snapshot Go encodes), and a status it does not know (CVFB0).
-- Another account's job, or an expired one, is CV404; a succeeded or failed one CV409, with
-- the Go transaction's message.
--
-- Rolling upgrade: a node of the previous release keeps running its Go transaction, which
-- takes the same locks in the same order; nothing else changes.
CREATE FUNCTION convsvc_cancel_job(p_account text, p_id text, p_deliveries_in_go boolean,
    OUT o_job jobs, OUT o_changed boolean)
LANGUAGE plpgsql SET convsvc.defer_notify = 'on' AS $$
BEGIN
    o_changed := false;
    SELECT * INTO o_job FROM jobs WHERE id = p_id AND (account_id = p_account AND expires_at > now()) IS TRUE FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no such job' USING ERRCODE = 'CV404';
    END IF;
    IF o_job.status = 'cancelled' THEN
        RETURN;
    ELSIF o_job.status IN ('succeeded', 'failed') THEN
        RAISE EXCEPTION 'job already %', o_job.status USING ERRCODE = 'CV409';
    ELSIF o_job.status NOT IN ('created', 'queued', 'running') THEN
        RAISE EXCEPTION 'status %: left to Go', o_job.status USING ERRCODE = 'CVFB0';
    END IF;
    UPDATE accounts SET reserved_cents = reserved_cents - 1 WHERE id = o_job.account_id AND reserved_cents >= 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger broken: account % has no reservation for job %', o_job.account_id, o_job.id;
    END IF;
    -- As pgstore's finish for a cancel: no output, no charge, the message and reason kept.
    UPDATE jobs SET status = 'cancelled', finished_at = now(), error_code = '',
            output_bytes = NULL, output_sha256 = NULL, output_attempt = NULL, output_warnings = NULL,
            output_verified = false, output_cached = false, output_object = NULL,
            input_sha256 = nullif(input_sha256, ''), hit_cents = NULL,
            lease_owner = NULL, lease_expires_at = NULL
        WHERE id = p_id RETURNING * INTO o_job;
    PERFORM convsvc_finish_common(o_job, p_deliveries_in_go);
    PERFORM convsvc_queue_notify('c:' || o_job.id);
    o_changed := true;
END $$;
