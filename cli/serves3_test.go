package cli_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/internal/testing/tests3"
)

// TestE2E_ServeOnPostgresAndS3: the binary started with --database postgres://...,
// --object-storage s3://BUCKET/PREFIX, --s3-endpoint and --s3-region, and the credentials in
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, opens no blob listener, hands out upload URLs on
// the S3 endpoint, converts end to end, and keeps the job's objects under the prefix.
func TestE2E_ServeOnPostgresAndS3(t *testing.T) {
	dbURL := testpg.NewDatabase(t)
	bk := tests3.NewBucket(t, tests3.Options{})
	t.Setenv("AWS_ACCESS_KEY_ID", bk.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", bk.SecretKey)
	p := serve(t, t.TempDir(), "--database", dbURL, "--admin-token", "cs_admin_e2e_s3",
		"--object-storage", "s3://"+bk.Name+"/nodes", "--s3-endpoint", bk.Endpoint, "--s3-region", bk.Region)
	if p.BlobURL != "s3://"+bk.Name+"/nodes" || p.Key == "" {
		t.Fatalf("serving line names object storage %q (key printed: %v)", p.BlobURL, p.Key != "")
	}
	c := &client.Client{BaseURL: p.URL, Key: p.Key}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scale(2*time.Minute))
	defer cancel()
	data := testenv.Sample(t, "images/sample.png")
	res, err := c.CreateJob(ctx, client.CreateJobRequest{InputFormat: "png", TargetFormat: "jpeg", InputBytes: int64(len(data))}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.UploadURL, bk.Endpoint+"/"+bk.Name+"/nodes/uploads/"+res.Job.ID+"?") {
		t.Fatalf("upload URL %s is not the bucket's (path style, prefix nodes)", res.UploadURL)
	}
	var out bytes.Buffer
	job, err := c.Convert(ctx, bytes.NewReader(data), int64(len(data)), "png", "jpeg", &out)
	if err != nil {
		t.Fatalf("convert: %v\n%s", err, p.Stderr())
	}
	sum := sha256.Sum256(out.Bytes())
	if job.Status != "succeeded" || job.Output == nil || hex.EncodeToString(sum[:]) != job.Output.SHA256 {
		t.Fatalf("job %s, %d bytes downloaded", job.Status, out.Len())
	}
	objs, err := bk.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bk.Name})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs.Contents {
		keys = append(keys, *o.Key)
	}
	want := "nodes/outputs/" + job.ID + "/1"
	found := false
	for _, k := range keys {
		found = found || k == want
		if !strings.HasPrefix(k, "nodes/") {
			t.Errorf("object %s outside the prefix", k)
		}
	}
	if !found {
		t.Fatalf("objects %v, want %s", keys, want)
	}
}
