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

// A whole conversion against a convsvc started in-process, in a temporary data dir.
func ExampleClient() {
	dir, _ := os.MkdirTemp("", "convsvc-example-*")
	defer os.RemoveAll(dir)
	var key string
	srv, err := service.Run(service.Config{
		DataDir: dir, Listen: "127.0.0.1:0", BlobListen: "127.0.0.1:0",
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnDefaultKey: func(_, k string) { key = k },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := &client.Client{BaseURL: srv.URL(), Key: key}
	png, _ := os.ReadFile("../testdata/images/sample.png")

	res, err := c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "jpeg", InputBytes: int64(len(png))}, "example-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("reserved:", res.Job.Status)
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
	fmt.Println("finished:", job.Status)
	out := filepath.Join(dir, "sample.jpg")
	if err := c.Download(ctx, *job.Output, out); err != nil {
		fmt.Println(err)
		return
	}
	jpg, _ := os.ReadFile(out)
	fmt.Println("JPEG:", bytes.HasPrefix(jpg, []byte{0xFF, 0xD8}))

	// API errors carry the stable code.
	_, err = c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "png", InputBytes: 1}, "")
	fmt.Println("same format twice:", client.IsCode(err, "unsupported_format"))
	// Output:
	// reserved: created
	// finished: succeeded
	// JPEG: true
	// same format twice: true
}
