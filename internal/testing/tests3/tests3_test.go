package tests3

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestNewBucket: a fresh, empty bucket that takes objects, and is gone, with its objects and
// versions, after the test.
func TestNewBucket(t *testing.T) {
	var bk Bucket
	t.Run("use", func(t *testing.T) {
		bk = NewBucket(t, Options{Versioned: true})
		cl := bk.Client()
		ctx := context.Background()
		list, err := cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bk.Name)})
		if err != nil || len(list.Contents) != 0 {
			t.Fatalf("new bucket: %v objects, %v; want empty", len(list.Contents), err)
		}
		for _, body := range []string{"v1", "v2"} {
			_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bk.Name), Key: aws.String("a/b"), Body: strings.NewReader(body)})
			if err != nil {
				t.Fatal(err)
			}
		}
		v, err := cl.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bk.Name)})
		if err != nil || v.Status != types.BucketVersioningStatusEnabled {
			t.Fatalf("versioning = %v, %v; want Enabled", v.Status, err)
		}
		if other := NewBucket(t, Options{}); other.Name == bk.Name {
			t.Fatalf("two buckets named %s", bk.Name)
		}
	})
	_, err := bk.Client().HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: aws.String(bk.Name)})
	if err == nil {
		t.Fatalf("bucket %s still exists after its test", bk.Name)
	}
}

// TestBuild_ExistingBinary: a cached binary is used as it is, without building.
func TestBuild_ExistingBinary(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "versitygw")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOPROXY", "off") // a build would fail
	got, err := Build(dir)
	if err != nil || got != bin {
		t.Fatalf("Build = %q, %v; want %q, nil", got, err, bin)
	}
}

// TestBuild_NoProxy: without a module proxy or a cached module, Build fails with go install's
// reason and leaves no binary.
func TestBuild_NoProxy(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOMODCACHE", t.TempDir())
	dir := t.TempDir()
	_, err := Build(dir)
	if err == nil || !strings.Contains(err.Error(), "go install") {
		t.Fatalf("Build without a proxy = %v; want go install's error", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "versitygw")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed build left %s/versitygw (%v)", dir, err)
	}
}

// TestStart_NoBinary: a test that needs S3 skips when there is no binary, and fails with CI=true.
func TestStart_NoBinary(t *testing.T) {
	for _, tc := range []struct {
		ci   string
		want string
	}{
		{"", "--- SKIP: TestHelperNeedsS3"},
		{"true", "--- FAIL: TestHelperNeedsS3"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperNeedsS3$", "-test.v")
		cmd.Env = append(os.Environ(), "CONVSVC_TESTS3_HELPER=1", EnvBinary+"="+filepath.Join(t.TempDir(), "missing"), "CI="+tc.ci, EnvEndpoint+"=")
		out, _ := cmd.CombinedOutput()
		if !bytes.Contains(out, []byte(tc.want)) || !bytes.Contains(out, []byte("no S3 server")) {
			t.Errorf("CI=%q: want %q and the reason in the output:\n%s", tc.ci, tc.want, out)
		}
	}
}

// TestHelperNeedsS3 runs only as TestStart_NoBinary's child process.
func TestHelperNeedsS3(t *testing.T) {
	if os.Getenv("CONVSVC_TESTS3_HELPER") != "1" {
		t.Skip("helper process of TestStart_NoBinary")
	}
	Start(t)
}
