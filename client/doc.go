// Package client is the Go client of the convsvc API: reserve a job, upload the file to its
// signed URL, start it, wait for it and download the result, plus the admin calls. The
// convsvc command itself uses it for `convsvc convert` and `convsvc admin`.
//
// A whole conversion in one call, with retries:
//
//	c := &client.Client{BaseURL: "http://127.0.0.1:8080", Key: os.Getenv("CONVSVC_KEY")}
//	in, _ := os.Open("photo.png")
//	st, _ := in.Stat()
//	out, _ := os.Create("photo.jpg")
//	job, err := c.Convert(ctx, in, st.Size(), "png", "jpeg", out)
//
// The same step by step, with options:
//
//	res, err := c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "jpeg",
//		InputBytes: st.Size(), Options: &client.Options{Quality: 80, Width: 640}}, "order-42")
//	if err != nil {
//		return err
//	}
//	if err := c.Upload(ctx, res.UploadURL, in, st.Size()); err != nil {
//		return err
//	}
//	if _, err := c.StartJob(ctx, res.Job.ID); err != nil {
//		return err
//	}
//	job, err := c.WaitJob(ctx, res.Job.ID, nil)
//	if err != nil {
//		return err
//	}
//	if job.Status != client.StatusSucceeded {
//		return fmt.Errorf("job %s", job.Error()) // ErrorCode is nil on a cancelled job
//	}
//	return c.Download(ctx, *job.Output, "photo.jpg")
//
// ListJobs walks the account's jobs page by page as an iterator (see its example).
//
// Errors the API answers come back as *APIError, whose Code is the API's stable error code;
// IsCode tests for one, and the Code* constants name them all:
//
//	if client.IsCode(err, client.CodeLimitReached) { ... }
//
// JSON calls answered 429 (rate_limited, or queue_full: a start past the account's
// max_queued), 502 storage_unavailable or 503 too_many_connections (the connection cap) are
// retried (Retries times, 4 by default): a 429 or 503 waits the server's Retry-After, a 502
// backs off exponentially with jitter, and no wait outlasts ctx. So StartJob waits for room in
// a full queue, within its retries (without end under WaitOutRateLimit). Pass an Idempotency-Key to CreateJob so a create retried
// after a lost answer never reserves twice.
//
// Upload and Convert never close the reader they are given. A file (any io.ReaderAt) is read
// from its current offset, and the offset is left (or put back) where it was, so the same
// *os.File serves Convert and then Upload, as above; and its upload is retried like a JSON call, and when
// the connection fails before any answer, with OnRetry told of each wait. A stream that can be
// read only once (a pipe, standard input) is not sent again once bytes of it were read.
package client
