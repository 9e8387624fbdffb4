// Command ogenprog converts a file with a client that ogen generated from convsvc's
// OpenAPI document: create, upload, start, wait, download, and one typed error.
//
// It is copied into a temporary module by internal/testing/gentest, next to the generated
// package ogenapi; it is not part of convsvc's build.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"gentest/ogenapi"

	"github.com/ogen-go/ogen/ogenerrors"
)

type keySource string

func (k keySource) ApiKey(context.Context, ogenapi.OperationName) (ogenapi.ApiKey, error) {
	return ogenapi.ApiKey{Token: string(k)}, nil
}

func (keySource) AdminToken(context.Context, ogenapi.OperationName) (ogenapi.AdminToken, error) {
	return ogenapi.AdminToken{}, ogenerrors.ErrSkipClientSecurity
}

// sizedPut gives a PUT the Content-Length that object storage requires: ogen sends an
// io.Reader body chunked.
type sizedPut struct{ size int64 }

func (s sizedPut) Do(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPut && req.Body != nil && req.ContentLength == 0 {
		req.ContentLength = s.size
	}
	return http.DefaultClient.Do(req)
}

// signed splits a signed object-storage URL into its base, job id and signature parameters.
func signed(u url.URL, prefix string) (base, id string, expires, size int, sig string, err error) {
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
	api, err := ogenapi.NewClient(apiURL, keySource(key))
	if err != nil {
		return err
	}

	// Create.
	cres, err := api.CreateJob(ctx, &ogenapi.CreateJobRequest{
		InputFormat: from, TargetFormat: to, InputBytes: len(data),
		Options: ogenapi.NewOptConversionOptions(ogenapi.ConversionOptions{Quality: ogenapi.NewOptInt(50)}),
	}, ogenapi.CreateJobParams{IdempotencyKey: ogenapi.NewOptString("ogen-1")})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	rsv, ok := cres.(*ogenapi.JobReservationHeaders)
	if !ok {
		return fmt.Errorf("create: %T %+v", cres, cres)
	}
	job := rsv.Response.Job
	fmt.Printf("created %s status=%s attempt=%d quality=%d\n", job.ID, job.Status, job.Attempt, job.Options.Value.Quality.Value)

	// Upload.
	base, id, expires, size, sig, err := signed(rsv.Response.UploadURL, "/uploads/")
	if err != nil {
		return fmt.Errorf("upload URL: %w", err)
	}
	blob, err := ogenapi.NewClient(base, keySource(key), ogenapi.WithClient(sizedPut{size: int64(len(data))}))
	if err != nil {
		return err
	}
	ures, err := blob.UploadInput(ctx, ogenapi.UploadInputReq{Data: bytes.NewReader(data)},
		ogenapi.UploadInputParams{ID: id, Expires: expires, Size: size, Sig: sig})
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	up, ok := ures.(*ogenapi.UploadResultHeaders)
	if !ok {
		return fmt.Errorf("upload: %T %+v", ures, ures)
	}
	fmt.Printf("uploaded %d bytes\n", up.Response.Bytes)

	// Start.
	sres, err := api.StartJob(ctx, ogenapi.StartJobParams{ID: job.ID})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	started, ok := sres.(*ogenapi.StartJobOKHeaders)
	if !ok {
		return fmt.Errorf("start: %T %+v", sres, sres)
	}
	fmt.Printf("started status=%s\n", started.Response.Status)

	// Wait.
	var done ogenapi.Job
	for {
		gres, err := api.GetJob(ctx, ogenapi.GetJobParams{ID: job.ID, Wait: ogenapi.NewOptInt(30)})
		if err != nil {
			return fmt.Errorf("get: %w", err)
		}
		got, ok := gres.(*ogenapi.JobHeaders)
		if !ok {
			return fmt.Errorf("get: %T %+v", gres, gres)
		}
		done = got.Response
		if done.Status == ogenapi.JobStatusSucceeded || done.Status == ogenapi.JobStatusFailed || done.Status == ogenapi.JobStatusCancelled {
			break
		}
	}
	if done.Status != ogenapi.JobStatusSucceeded {
		return fmt.Errorf("job %s: %s %v", done.ID, done.Status, done.ErrorCode)
	}
	fmt.Printf("finished status=%s error_code_null=%t sha256=%s\n", done.Status, done.ErrorCode.IsNull(), done.Output.Value.SHA256)

	// Download.
	base, id, expires, size, sig, err = signed(done.Output.Value.URL, "/outputs/")
	if err != nil {
		return fmt.Errorf("output URL: %w", err)
	}
	blob, err = ogenapi.NewClient(base, keySource(key))
	if err != nil {
		return err
	}
	dres, err := blob.DownloadOutput(ctx, ogenapi.DownloadOutputParams{ID: id, Expires: expires, Size: size, Sig: sig})
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	dl, ok := dres.(*ogenapi.DownloadOutputOKHeaders)
	if !ok {
		return fmt.Errorf("download: %T %+v", dres, dres)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), dl.Response.Data)
	if err := errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("download: %w", err)
	}
	fmt.Printf("downloaded %d bytes sha256=%s\n", n, hex.EncodeToString(h.Sum(nil)))

	// One typed error.
	eres, err := api.GetJob(ctx, ogenapi.GetJobParams{ID: "job_doesnotexist"})
	if err != nil {
		return fmt.Errorf("get missing: %w", err)
	}
	nf, ok := eres.(*ogenapi.JobNotFoundHeaders)
	if !ok {
		return fmt.Errorf("get missing: %T %+v", eres, eres)
	}
	fmt.Printf("typed error code=%s message_set=%t\n", nf.Response.Error.Code, nf.Response.Error.Message != "")
	return nil
}
