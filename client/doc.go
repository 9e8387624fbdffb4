// Package client is the Go client of the convsvc API: reserve a job, upload the file to its
// signed URL, start it, wait for it and download the result, plus the admin calls. The
// convsvc command itself uses it for `convsvc convert` and `convsvc admin`.
//
// A whole conversion:
//
//	c := &client.Client{BaseURL: "http://127.0.0.1:8080", Key: os.Getenv("CONVSVC_API_KEY")}
//	f, _ := os.Open("photo.png")
//	st, _ := f.Stat()
//	res, err := c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "jpeg", InputBytes: st.Size()}, "order-42")
//	if err != nil {
//		return err
//	}
//	if err := c.Upload(ctx, res.UploadURL, f, st.Size()); err != nil {
//		return err
//	}
//	if _, err := c.StartJob(ctx, res.Job.ID); err != nil {
//		return err
//	}
//	job, err := c.WaitJob(ctx, res.Job.ID, nil)
//	if err != nil {
//		return err
//	}
//	if job.Status != "succeeded" {
//		return fmt.Errorf("%s: %s", *job.ErrorCode, *job.ErrorMessage)
//	}
//	return c.Download(ctx, *job.Output, "photo.jpg")
//
// Errors the API answers come back as *APIError, whose Code is the API's stable error code;
// IsCode tests for one:
//
//	if client.IsCode(err, "limit_reached") { ... }
//
// JSON calls answered 429 rate_limited or 502 storage_unavailable are retried (Retries times,
// 4 by default): a 429 waits the server's Retry-After, a 502 backs off exponentially with
// jitter, and no wait outlasts ctx. Pass an Idempotency-Key to CreateJob so a create retried
// after a lost answer never reserves twice.
package client
