-- convsvc schema 27: jobs' three CHECK constraints become one, a call of a PL/pgSQL function
-- (issue 34 item 2: less PostgreSQL CPU per job write). PostgreSQL 15 reads a table's CHECK
-- expressions back from their stored node trees (stringToNode), plans and compiles them in every
-- INSERT and UPDATE of the table: 0001's three cost about 113,000 instructions per statement
-- on jobs (measured with valgrind on a single-user PostgreSQL, docs/benchmarks.md), most of it
-- re-reading jobs_status_check, whose IN list is stored as an ARRAY[...] of six constants
-- folded again each time. One call's tree is short, and the function's body is compiled once
-- per session (its expression's plan is cached): a create and a start take 150,000
-- instructions fewer, 5.8% of their 2.59 million (every claim, finish, heartbeat, requeue and
-- reap saves the same per statement).
--
-- The function is the three constraints' conjunction: a row passes when none of them is false,
-- as before (a CHECK passes on true or NULL; the AND is false exactly when one operand is). A
-- violation is still SQLSTATE 23514 on jobs; it names jobs_row_check where it named
-- jobs_status_check, jobs_check or jobs_check1 (nothing reads those names). No SET clause: it
-- would make each call save and restore the GUCs; the body names only pg_catalog's operators.
-- Replacing the function later does not check the stored rows again: a change that narrows it
-- drops and adds the constraint.
--
-- The ADD validates every stored job (one pass over jobs, a function call per row) under the
-- DROP's ACCESS EXCLUSIVE lock: job writes wait for it (measured: 30,000 jobs in 17 ms).
CREATE FUNCTION convsvc_job_row_ok(p_status text, p_lease_expires_at timestamptz, p_output_bytes bigint,
    p_finished_at timestamptz) RETURNS boolean LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN p_status IN ('created', 'queued', 'running', 'succeeded', 'failed', 'cancelled')
        AND (p_status = 'running') = (p_lease_expires_at IS NOT NULL)
        AND (p_status <> 'succeeded' OR (p_output_bytes IS NOT NULL AND p_finished_at IS NOT NULL));
END $$;

ALTER TABLE jobs
    DROP CONSTRAINT jobs_status_check,
    DROP CONSTRAINT jobs_check,
    DROP CONSTRAINT jobs_check1,
    ADD CONSTRAINT jobs_row_check CHECK (convsvc_job_row_ok(status, lease_expires_at, output_bytes, finished_at));
