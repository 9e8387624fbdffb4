-- convsvc schema 2: what a start sealed (the upload's size, ETag and version id in S3), so the
-- workers read exactly that object, and the attempt that wrote the output, whose key S3
-- downloads are presigned for.

ALTER TABLE jobs
    ADD COLUMN upload_size       bigint,
    ADD COLUMN upload_etag       text,
    ADD COLUMN upload_version_id text,
    ADD COLUMN output_attempt    integer;
