// Command oapiprog converts a file with a client that oapi-codegen generated from
// convsvc's OpenAPI document: create, upload, start, wait, download, and one typed error.
//
// It is copied into a temporary module by internal/testing/gentest, next to the generated
// package oapi; it is not part of convsvc's build.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"gentest/oapi"
)

// signed splits a signed object-storage URL into its base, job id and signature parameters.
func signed(raw, prefix string) (base, id string, expires, size int, sig string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return
	}
	q := u.Query()
	if expires, err = strconv.Atoi(q.Get("expires")); err != nil {
		return
	}
	if size, err = strconv.Atoi(q.Get("size")); err != nil {
		return
	}
	return u.Scheme + "://" + u.Host, strings.TrimPrefix(u.Path, prefix), expires, size, q.Get("sig"), nil
}

func main() {
	apiURL := flag.String("api", "", "API base URL")
	key := flag.String("key", "", "API key")
	in := flag.String("in", "", "input file")
	out := flag.String("out", "", "output file")
	from := flag.String("from", "png", "input format")
	to := flag.String("to", "jpeg", "target format")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, *apiURL, *key, *in, *out, *from, *to); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, apiURL, key, in, out, from, to string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	auth := oapi.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+key)
		return nil
	})
	api, err := oapi.NewClientWithResponses(apiURL, auth)
	if err != nil {
		return err
	}

	// Create.
	quality := 50
	idem := "oapi-1"
	cres, err := api.CreateJobWithResponse(ctx, &oapi.CreateJobParams{IdempotencyKey: &idem}, oapi.CreateJobJSONRequestBody{
		InputFormat: from, TargetFormat: to, InputBytes: len(data), Options: &oapi.ConversionOptions{Quality: &quality},
	})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if cres.JSON200 == nil {
		return fmt.Errorf("create: %s %s", cres.Status(), cres.Body)
	}
	job := cres.JSON200.Job
	fmt.Printf("created %s status=%s attempt=%d quality=%d\n", job.Id, job.Status, job.Attempt, *job.Options.Quality)

	// Upload.
	base, id, expires, size, sig, err := signed(cres.JSON200.UploadUrl, "/uploads/")
	if err != nil {
		return fmt.Errorf("upload URL: %w", err)
	}
	blob, err := oapi.NewClientWithResponses(base)
	if err != nil {
		return err
	}
	ures, err := blob.UploadInputWithBodyWithResponse(ctx, id, &oapi.UploadInputParams{Expires: expires, Size: size, Sig: sig},
		"application/octet-stream", bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	if ures.JSON200 == nil {
		return fmt.Errorf("upload: %s %s", ures.Status(), ures.Body)
	}
	fmt.Printf("uploaded %d bytes\n", ures.JSON200.Bytes)

	// Start.
	sres, err := api.StartJobWithResponse(ctx, job.Id)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if sres.JSON200 == nil {
		return fmt.Errorf("start: %s %s", sres.Status(), sres.Body)
	}
	fmt.Printf("started status=%s\n", sres.JSON200.Status)

	// Wait.
	var done oapi.Job
	wait := 30
	for {
		gres, err := api.GetJobWithResponse(ctx, job.Id, &oapi.GetJobParams{Wait: &wait})
		if err != nil {
			return fmt.Errorf("get: %w", err)
		}
		if gres.JSON200 == nil {
			return fmt.Errorf("get: %s %s", gres.Status(), gres.Body)
		}
		done = *gres.JSON200
		if done.Status == oapi.JobStatusSucceeded || done.Status == oapi.JobStatusFailed || done.Status == oapi.JobStatusCancelled {
			break
		}
	}
	if done.Status != oapi.JobStatusSucceeded {
		return fmt.Errorf("job %s: %s %v", done.Id, done.Status, done.ErrorCode)
	}
	fmt.Printf("finished status=%s error_code_null=%t sha256=%s\n", done.Status, done.ErrorCode == nil, done.Output.Sha256)

	// Download.
	base, id, expires, size, sig, err = signed(done.Output.Url, "/outputs/")
	if err != nil {
		return fmt.Errorf("output URL: %w", err)
	}
	if blob, err = oapi.NewClientWithResponses(base); err != nil {
		return err
	}
	dres, err := blob.DownloadOutputWithResponse(ctx, id, &oapi.DownloadOutputParams{Expires: expires, Size: size, Sig: sig})
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	if dres.StatusCode() != http.StatusOK {
		return fmt.Errorf("download: %s %s", dres.Status(), dres.Body)
	}
	if err := os.WriteFile(out, dres.Body, 0o644); err != nil {
		return err
	}
	sum := sha256.Sum256(dres.Body)
	fmt.Printf("downloaded %d bytes sha256=%s\n", len(dres.Body), hex.EncodeToString(sum[:]))

	// One typed error.
	eres, err := api.GetJobWithResponse(ctx, "job_doesnotexist", nil)
	if err != nil {
		return fmt.Errorf("get missing: %w", err)
	}
	if eres.JSON404 == nil {
		return fmt.Errorf("get missing: %s %s", eres.Status(), eres.Body)
	}
	var code oapi.JobNotFoundErrorCode = eres.JSON404.Error.Code
	fmt.Printf("typed error code=%s message_set=%t\n", code, eres.JSON404.Error.Message != "")
	return nil
}
