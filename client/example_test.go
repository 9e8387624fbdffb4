package client_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/service"
)

// startServer runs a whole convsvc in-process in a temporary data dir, on loopback ports; stop
// shuts it down and removes the dir.
func startServer() (c *client.Client, dir string, stop func(), err error) {
	dir, err = os.MkdirTemp("", "convsvc-example-*")
	if err != nil {
		return nil, "", nil, err
	}
	var key string
	srv, err := service.Run(service.Config{
		DataDir: dir, Listen: "127.0.0.1:0", BlobListen: "127.0.0.1:0",
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnDefaultKey: func(_, k string) { key = k },
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, err
	}
	return &client.Client{BaseURL: srv.URL(), Key: key}, dir, func() { srv.Close(); os.RemoveAll(dir) }, nil
}

// A whole conversion in one call.
func ExampleClient_Convert() {
	c, _, stop, err := startServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	in, _ := os.Open("../testdata/images/sample.png")
	defer in.Close()
	st, _ := in.Stat()
	var out bytes.Buffer
	job, err := c.Convert(ctx, in, st.Size(), "png", "jpeg", &out)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.Status, bytes.HasPrefix(out.Bytes(), []byte{0xFF, 0xD8}), int64(out.Len()) == job.Output.Bytes)
	// Output:
	// succeeded true true
}

// The flow step by step, with options, and the typed codes of errors.
func ExampleClient() {
	c, dir, stop, err := startServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	png, _ := os.ReadFile("../testdata/images/sample.png")

	opts := &client.Options{Quality: 50}
	res, err := c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "jpeg", InputBytes: int64(len(png)), Options: opts}, "example-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("reserved:", res.Job.Status, "quality", res.Job.Options.Quality)
	if err := c.Upload(ctx, res.UploadURL, bytes.NewReader(png), int64(len(png))); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := c.StartJob(ctx, res.Job.ID); err != nil {
		fmt.Println(err)
		return
	}
	job, err := c.WaitJob(ctx, res.Job.ID, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if job.Status != client.StatusSucceeded {
		fmt.Println("job", job.Error()) // safe for a cancelled job, whose ErrorCode is nil
		return
	}
	fmt.Println("finished:", job.Status)
	out := filepath.Join(dir, "sample.jpg")
	if err := c.Download(ctx, *job.Output, out); err != nil {
		fmt.Println(err)
		return
	}
	jpg, _ := os.ReadFile(out)
	fmt.Println("JPEG:", bytes.HasPrefix(jpg, []byte{0xFF, 0xD8}))

	// A cancelled job has no error code; Error says what happened without dereferencing it.
	res, err = c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "gif", InputBytes: 1}, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	cancelled, err := c.CancelJob(ctx, res.Job.ID)
	fmt.Println("cancelled:", cancelled.Error(), cancelled.ErrorCode == nil, err)

	// API errors carry the stable code.
	_, err = c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "rar", InputBytes: 1}, "")
	fmt.Println("png to rar:", client.IsCode(err, client.CodeUnsupportedFormat))
	// A same-format job is a transform: it needs an option that changes the output.
	_, err = c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "png", InputBytes: 1}, "")
	fmt.Println("png to png, no option:", client.IsCode(err, client.CodeUnsupportedFormat))
	_, err = c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "gif", InputBytes: 1, Options: &client.Options{Quality: 50}}, "")
	fmt.Println("quality for gif:", client.IsCode(err, client.CodeInvalidRequest))
	// Output:
	// reserved: created quality 50
	// finished: succeeded
	// JPEG: true
	// cancelled: cancelled true <nil>
	// png to rar: true
	// png to png, no option: true
	// quality for gif: true
}

// Every job of the account, fetched a page at a time as the loop goes on.
func ExampleClient_ListJobs() {
	c, _, stop, err := startServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 5 {
		if _, err := c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "gif", InputBytes: 1}, ""); err != nil {
			fmt.Println(err)
			return
		}
	}
	n := 0
	for job, err := range c.ListJobs(ctx, client.ListJobsParams{Status: client.StatusCreated, PageSize: 2}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if job.Status == client.StatusCreated {
			n++
		}
	}
	fmt.Println("created jobs:", n)
	// Output:
	// created jobs: 5
}
