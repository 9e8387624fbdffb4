package testenv

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/internal/testing/tests3"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/store"
)

// openStore reopens a stopped service's database for checks.
func openStore(dataDir string) (*store.Store, error) {
	return store.Open(filepath.Join(dataDir, "convsvc.db"), store.Options{LockTimeout: 5 * time.Second})
}

// OpenStore reopens a stopped service's (or binary's) database for checks.
func OpenStore(dataDir string) (*store.Store, error) { return openStore(dataDir) }

// EnvDatabase names the variable that selects the job database of every Start: "postgres"
// gives each service a fresh PostgreSQL database (internal/testing/testpg; the package's TestMain
// must call testpg.Main or testpg.Run); anything else keeps bbolt in the data dir.
const EnvDatabase = "CONVSVC_TEST_DATABASE"

// EnvObjectStorage names the variable that selects the object storage of every Start: "s3"
// gives each service a fresh bucket on an S3-compatible server (internal/testing/tests3: versitygw,
// or the server CONVSVC_TEST_S3_ENDPOINT names; the package's TestMain must stop it with
// tests3.Stop or tests3.Main); anything else keeps the blob store in the data dir.
const EnvObjectStorage = "CONVSVC_TEST_OBJECT_STORAGE"

// S3 is a Start option that puts the service's uploads and outputs in a fresh bucket
// (skipping the test when no S3 server can be had, outside CI).
func S3(t testing.TB) func(*service.Config) {
	t.Helper()
	return S3With(t, tests3.Options{})
}

// S3With is S3 with a bucket made with opts (tests3.Options.Versioned).
func S3With(t testing.TB, opts tests3.Options) func(*service.Config) {
	t.Helper()
	b := tests3.NewBucket(t, opts)
	storage := "s3://" + b.Name + "/convsvc"
	buckets.Store(storage, &b)
	t.Cleanup(func() { buckets.Delete(storage) })
	return func(c *service.Config) {
		c.ObjectStorage = storage
		c.S3 = service.S3Config{Endpoint: b.Endpoint, Region: b.Region, AccessKey: b.AccessKey, SecretKey: b.SecretKey}
	}
}

// buckets maps the ObjectStorage value of each S3 option to its bucket, for Env.Bucket.
var buckets sync.Map

// UploadKey is the key of the job's upload in e.Bucket.
func (e *Env) UploadKey(jobID string) string { return "convsvc/uploads/" + jobID }

// PutObject stores data under key in e.Bucket, directly (not through a presigned URL).
func (e *Env) PutObject(key string, data []byte) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e.Bucket.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(e.Bucket.Name), Key: aws.String(key), Body: bytes.NewReader(data)}); err != nil {
		e.T.Fatalf("put %s: %v", key, err)
	}
}

// ObjectKeys lists the keys in e.Bucket under the service's prefix.
func (e *Env) ObjectKeys() []string {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := e.Bucket.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(e.Bucket.Name), Prefix: aws.String("convsvc/")})
	if err != nil {
		e.T.Fatalf("list objects: %v", err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// LocalBlobsOnly skips a test that checks something only the local blob store has (its
// files, its listener) when CONVSVC_TEST_OBJECT_STORAGE selects S3.
func LocalBlobsOnly(t testing.TB, what string) {
	t.Helper()
	if os.Getenv(EnvObjectStorage) == "s3" {
		t.Skipf("local blob store only: %s", what)
	}
}

// Postgres is a Start option that puts the service's jobs in a fresh PostgreSQL database
// (skipping the test when PostgreSQL is not installed, outside CI), with a configured admin
// token as PostgreSQL requires.
func Postgres(t testing.TB) func(*service.Config) {
	t.Helper()
	dbURL := testpg.NewDatabase(t)
	return func(c *service.Config) {
		c.Database = dbURL
		if c.AdminToken == "" {
			c.AdminToken = "cs_admin_testenv_postgres"
		}
	}
}

// verifyPostgres checks the ledger of a stopped service's PostgreSQL database.
func verifyPostgres(t testing.TB, dbURL string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := pgstore.Open(ctx, dbURL, pgstore.Options{})
	if err != nil {
		t.Errorf("reopen database: %v", err)
		return
	}
	defer st.Close()
	if err := st.VerifyLedger(); err != nil {
		t.Errorf("ledger: %v", err)
	}
}

// BboltOnly skips a test that checks something only the embedded store has (bbolt's
// counters, backup, the database file) when CONVSVC_TEST_DATABASE selects PostgreSQL.
func BboltOnly(t testing.TB, what string) {
	t.Helper()
	if os.Getenv(EnvDatabase) == "postgres" {
		t.Skipf("bbolt only: %s", what)
	}
}
