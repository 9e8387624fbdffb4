-- Whether a succeeded job's output passed its format's re-read check before the job succeeded
-- (output.verified, docs/reliability.md "Outputs checked before success"); false for outputs of
-- formats without a check and for jobs that have no output.
ALTER TABLE jobs ADD COLUMN output_verified boolean NOT NULL DEFAULT false;
