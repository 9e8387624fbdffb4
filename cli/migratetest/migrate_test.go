package migratetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/convsvc/convsvc/cli"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/testpg"
	"github.com/convsvc/convsvc/internal/testing/tests3"
	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/s3store"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/store"
)

// Package migratetest holds only tests: `convsvc admin migrate` (cli.Migrate) against a data
// dir made by the real service, a real PostgreSQL and a real S3 server. They are apart from
// cli's own tests so that TestMain can be testpg.Main.

// TestMain stops the private PostgreSQL server (testpg.Run) and the local S3 server
// (tests3.Stop) once every test has run.
func TestMain(m *testing.M) {
	code := testpg.Run(m)
	tests3.Stop()
	os.Exit(code)
}

// source is a data dir made by a real service, and what it holds.
type source struct {
	dir          string
	keys         map[string]string // account id -> live key secret
	revoked      string            // a revoked key's secret
	inputs       map[string][]byte // job id -> uploaded bytes, for the unfinished jobs with an upload
	owner        map[string]string // job id -> account id, for the jobs in inputs
	created      []string          // jobs left created (with and without an upload)
	queued       string            // a job left queued
	running      string            // a job left running (attempt 1)
	succeeded    []string
	cancelled    string
	accounts     []store.Account
	keyRecords   []store.APIKey
	successMonth map[string]map[string]int64 // account -> month -> successes
	months       int                         // account-months with spend
}

// makeSource runs the real service in dir: two accounts with keys, three successful
// conversions, a cancelled job, created jobs with and without an upload; then, with the
// service stopped, one uploaded job is started (queued), one started and claimed (running),
// and a second key revoked, through the store.
func makeSource(t *testing.T) *source {
	t.Helper()
	src := &source{dir: filepath.Join(t.TempDir(), "data"), keys: map[string]string{}, inputs: map[string][]byte{}, owner: map[string]string{}}
	var acctA, acctB string
	var toQueue, toRun string
	t.Run("service", func(t *testing.T) {
		e := testenv.Start(t, func(c *service.Config) { c.DataDir = src.dir })
		var keyA, keyB string
		acctA, keyA = e.NewAccount(50)
		acctB, keyB = e.NewAccount(10)
		src.keys[acctA], src.keys[acctB], src.keys[e.AccountID] = keyA, keyB, e.Key
		png := testenv.NoisePNG(t, 8, 8)
		for _, key := range []string{keyA, keyA, keyB} {
			job := e.Convert(key, "png", "jpeg", png)
			if job.Status != "succeeded" {
				t.Fatalf("conversion %s: %s %+v", job.ID, job.Status, job.ErrorCode)
			}
			src.succeeded = append(src.succeeded, job.ID)
		}
		upload := func(key string, n int) string {
			data := testenv.NoisePNG(t, n, n)
			res := e.Create(key, "png", "jpeg", int64(len(data)))
			testenv.MustStatus(t, e.Upload(res.UploadURL, data), 200, "")
			src.inputs[res.Job.ID] = data
			for acct, k := range src.keys {
				if k == key {
					src.owner[res.Job.ID] = acct
				}
			}
			return res.Job.ID
		}
		src.created = append(src.created, upload(keyA, 9), e.Create(keyB, "png", "jpeg", 100).Job.ID)
		toQueue, toRun = upload(keyA, 10), upload(keyB, 11)
		src.cancelled = e.Create(keyA, "png", "jpeg", 100).Job.ID
		testenv.MustStatus(t, e.Do("POST", "/v1/jobs/"+src.cancelled+"/cancel", keyA, nil), 200, "")
		r := e.Do("POST", "/v1/admin/accounts/"+acctA+"/keys", e.AdminToken, nil)
		testenv.MustStatus(t, r, 200, "")
		src.revoked = r.Map(t)["key"].(string)
	}) // the service shuts down here and its ledger is checked
	if t.Failed() {
		t.FailNow()
	}

	st, err := store.Open(filepath.Join(src.dir, "convsvc.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// One claim: the job it takes is left running (attempt 1), the other queued. Which one
	// depends on the accounts' turn (claims serve the accounts in id order), not on the order
	// of the starts.
	if _, err := st.StartJob(acctB, toRun, int64(len(src.inputs[toRun]))); err != nil {
		t.Fatal(err)
	}
	if _, err := st.StartJob(acctA, toQueue, int64(len(src.inputs[toQueue]))); err != nil {
		t.Fatal(err)
	}
	job, ok, err := st.ClaimJob()
	if err != nil || !ok || (job.ID != toRun && job.ID != toQueue) {
		t.Fatalf("claim: %v %v %v, want %s or %s", job.ID, ok, err, toRun, toQueue)
	}
	if job.ID == toQueue {
		toRun, toQueue = toQueue, toRun
	}
	src.running, src.queued = toRun, toQueue
	key, err := st.Authenticate(src.revoked)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.RevokeKey(key.ID); err != nil {
		t.Fatal(err)
	}
	if err := st.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	ro, err := store.OpenReadOnly(filepath.Join(src.dir, "convsvc.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	dump, err := ro.Dump()
	if err != nil {
		t.Fatal(err)
	}
	src.accounts, src.keyRecords = dump.Accounts, dump.Keys
	src.successMonth = map[string]map[string]int64{}
	for _, a := range src.accounts {
		for m, n := range a.MonthlySpend {
			if src.successMonth[a.ID] == nil {
				src.successMonth[a.ID] = map[string]int64{}
			}
			src.successMonth[a.ID][m] = n
			src.months++
		}
	}
	if len(src.accounts) != 3 || len(src.keyRecords) != 4 {
		t.Fatalf("source has %d accounts and %d keys, want 3 and 4", len(src.accounts), len(src.keyRecords))
	}
	return src
}

func s3Options(bk tests3.Bucket, prefix string) *s3store.Options {
	return &s3store.Options{Endpoint: bk.Endpoint, Region: bk.Region, Bucket: bk.Name, Prefix: prefix,
		AccessKey: bk.AccessKey, SecretKey: bk.SecretKey, PathStyle: true}
}

func TestMigrate(t *testing.T) {
	src := makeSource(t)
	ctx := context.Background()

	t.Run("both targets through the command", func(t *testing.T) {
		dbURL := testpg.NewDatabase(t)
		bk := tests3.NewBucket(t, tests3.Options{})
		// The S3 settings come as serve reads them: the region from AWS_REGION, the path style
		// auto (on, with an endpoint), the credentials from a shared profile through the SDK's
		// default chain (no AWS_ACCESS_KEY_ID).
		credentials := filepath.Join(t.TempDir(), "credentials")
		if err := os.WriteFile(credentials, []byte("[migrate]\naws_access_key_id = "+bk.AccessKey+"\naws_secret_access_key = "+bk.SecretKey+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_PROFILE": "migrate",
			"AWS_SHARED_CREDENTIALS_FILE": credentials, "AWS_CONFIG_FILE": filepath.Join(t.TempDir(), "none"),
			"AWS_EC2_METADATA_DISABLED": "true", "AWS_REGION": bk.Region} {
			t.Setenv(k, v)
		}
		var out, errOut bytes.Buffer
		args := []string{"admin", "migrate", "--data", src.dir, "--database", dbURL,
			"--object-storage", "s3://" + bk.Name + "/convsvc", "--s3-endpoint", bk.Endpoint}
		root := cli.NewRootCommand()
		root.SetArgs(args)
		root.SetOut(&out)
		root.SetErr(&errOut)
		if err := root.Execute(); err != nil {
			t.Fatalf("migrate: %v\n%s%s", err, out.String(), errOut.String())
		}
		t.Logf("convsvc %s\n%s", strings.Join(args[:2], " "), out.String())
		for _, want := range []string{
			fmt.Sprintf("database: copied 3 accounts, 4 keys (1 revoked), %d months of spend,", src.months) + " 4 unfinished jobs (1 of them was running: queued again)",
			"database: not copied: 4 finished jobs (3 successes kept in the ledger as purged)",
			"database: ledger verified",
			"object storage: copied 3 input files (",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out.String())
			}
		}
		if errOut.Len() != 0 {
			t.Errorf("stderr: %s", errOut.String())
		}

		pg, err := pgstore.Open(ctx, dbURL, pgstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer pg.Close()
		if err := pg.VerifyLedger(); err != nil {
			t.Fatalf("target ledger: %v", err)
		}
		checkAccounts(t, src, pg)
		checkKeys(t, src, pg)
		checkJobs(t, src, pg)

		cl := bk.Client()
		for id, data := range src.inputs {
			obj, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bk.Name), Key: aws.String("convsvc/uploads/" + id)})
			if err != nil {
				t.Fatalf("input of %s: %v", id, err)
			}
			got, err := io.ReadAll(obj.Body)
			obj.Body.Close()
			if err != nil || sha256.Sum256(got) != sha256.Sum256(data) {
				t.Errorf("input of %s: %d bytes (err %v), sha256 differs from the %d bytes uploaded", id, len(got), err, len(data))
			}
		}
		// Each input is there twice: the upload and its sealed copy under inputs/{id}/.
		list, err := cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bk.Name)})
		if err != nil || len(list.Contents) != 2*len(src.inputs) {
			t.Errorf("bucket holds %d objects (%v), want the %d inputs and their sealed copies", len(list.Contents), err, len(src.inputs))
		}
		for _, o := range list.Contents {
			k := aws.ToString(o.Key)
			id, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(k, "convsvc/uploads/"), "convsvc/inputs/"), "/")
			if _, ok := src.inputs[id]; !ok || aws.ToInt64(o.Size) != int64(len(src.inputs[id])) {
				t.Errorf("bucket holds %s (%d bytes), not a migrated input or its copy", k, aws.ToInt64(o.Size))
			}
		}

		// The imported queue works: the next claim is a migrated queued job, attempt 2.
		job, ok, err := pg.ClaimJob()
		if err != nil || !ok || job.ID != src.running || job.Attempt != 2 {
			t.Errorf("claim on the target: %s attempt %d, %v %v; want %s at attempt 2", job.ID, job.Attempt, ok, err, src.running)
		}

		// A second run is refused, and changes nothing.
		root = cli.NewRootCommand()
		root.SetArgs(args)
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		if err := root.Execute(); !errors.Is(err, cli.ErrMigrateTargetNotEmpty) {
			t.Fatalf("second run: %v, want ErrTargetNotEmpty", err)
		}
		if n := countJobs(t, pg); n != 4 {
			t.Errorf("after the refused run the target has %d jobs, want 4", n)
		}

		// With --replace-target it copies again, the same.
		root = cli.NewRootCommand()
		root.SetArgs(append(args, "--replace-target"))
		out.Reset()
		root.SetOut(&out)
		root.SetErr(io.Discard)
		if err := root.Execute(); err != nil {
			t.Fatalf("run with --replace-target: %v", err)
		}
		checkAccounts(t, src, pg)
		checkJobs(t, src, pg) // the claim above is undone: the running job is queued again
		if err := pg.VerifyLedger(); err != nil {
			t.Fatalf("target ledger after replace: %v", err)
		}
	})

	t.Run("migrated jobs convert on PostgreSQL + S3", func(t *testing.T) {
		dbURL := testpg.NewDatabase(t)
		bk := tests3.NewBucket(t, tests3.Options{})
		if _, err := cli.Migrate(ctx, cli.MigrateOptions{DataDir: src.dir, DatabaseURL: dbURL, ObjectStorage: s3Options(bk, "convsvc")}); err != nil {
			t.Fatal(err)
		}
		// The started jobs carry the copied object as their seal, the created ones nothing yet.
		pg, err := pgstore.Open(ctx, dbURL, pgstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{src.queued, src.running} {
			j, err := pg.Job(src.owner[id], id)
			if err != nil || j.Upload == nil || j.Upload.Size != int64(len(src.inputs[id])) || j.Upload.ETag == "" {
				t.Fatalf("migrated %s: upload %+v, %v; want the copied object's size and ETag", id, j.Upload, err)
			}
		}
		pg.Close()

		e := testenv.Start(t, func(c *service.Config) {
			c.Database = dbURL
			c.AdminToken = "cs_admin_migrated"
			c.ObjectStorage = "s3://" + bk.Name + "/convsvc"
			c.S3 = service.S3Config{Endpoint: bk.Endpoint, Region: bk.Region, AccessKey: bk.AccessKey, SecretKey: bk.SecretKey}
		})
		for _, id := range []string{src.queued, src.running} {
			key := src.keys[src.owner[id]]
			if j := e.Get(key, id, 60); j.Status != "succeeded" {
				t.Errorf("migrated started job %s: %s %v", id, j.Status, j.ErrorCode)
			}
		}
		// A created job whose file was copied starts and converts on the new backends.
		created := src.created[0]
		key := src.keys[src.owner[created]]
		testenv.MustStatus(t, e.Start(key, created), 200, "")
		if j := e.Get(key, created, 60); j.Status != "succeeded" {
			t.Errorf("migrated created job %s after start: %s %v", created, j.Status, j.ErrorCode)
		}
	})

	t.Run("webhooks move: endpoints, secrets, job webhook_url, pending deliveries", testMigrateWebhooks)

	t.Run("database with data is refused", func(t *testing.T) {
		dbURL := testpg.NewDatabase(t)
		pg, err := pgstore.Open(ctx, dbURL, pgstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer pg.Close()
		def, _, err := pg.EnsureDefaultAccount(100) // what a node started on it does
		if err != nil {
			t.Fatal(err)
		}
		_, err = cli.Migrate(ctx, cli.MigrateOptions{DataDir: src.dir, DatabaseURL: dbURL})
		if !errors.Is(err, cli.ErrMigrateTargetNotEmpty) {
			t.Fatalf("err = %v, want ErrTargetNotEmpty", err)
		}
		var n int
		if err := pg.Pool().QueryRow(ctx, `SELECT count(*) FROM accounts`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("target has %d accounts (%v) after the refusal, want its 1", n, err)
		}
		if a, err := pg.Account(def.ID); err != nil || a.Name != store.DefaultAccountName {
			t.Fatalf("default account after the refusal: %+v %v", a, err)
		}
	})

	t.Run("object storage with data is refused", func(t *testing.T) {
		bk := tests3.NewBucket(t, tests3.Options{})
		_, err := bk.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bk.Name), Key: aws.String("p/uploads/job_other"),
			Body: strings.NewReader("x")})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cli.Migrate(ctx, cli.MigrateOptions{DataDir: src.dir, ObjectStorage: s3Options(bk, "p")})
		if !errors.Is(err, cli.ErrMigrateTargetNotEmpty) {
			t.Fatalf("err = %v, want ErrTargetNotEmpty", err)
		}
		// Another prefix of the same bucket is empty: accepted, inputs only.
		rep, err := cli.Migrate(ctx, cli.MigrateOptions{DataDir: src.dir, ObjectStorage: s3Options(bk, "q")})
		if err != nil || rep.Inputs != len(src.inputs) {
			t.Fatalf("run into an empty prefix: %+v %v; want %d inputs", rep, err, len(src.inputs))
		}
		for id, data := range src.inputs {
			if u := rep.Uploads[id]; u.Size != int64(len(data)) || u.ETag == "" {
				t.Errorf("upload info of %s = %+v, want size %d and an ETag", id, u, len(data))
			}
		}
	})

	t.Run("a failure leaves both targets empty", func(t *testing.T) {
		dbURL := testpg.NewDatabase(t)
		pg, err := pgstore.Open(ctx, dbURL, pgstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer pg.Close()
		// A constraint the data dir's jobs break makes the import fail after the inputs
		// were copied.
		if _, err := pg.Pool().Exec(ctx, `ALTER TABLE jobs ADD CONSTRAINT no_png CHECK (input_format <> 'png')`); err != nil {
			t.Fatal(err)
		}
		bk := tests3.NewBucket(t, tests3.Options{})
		_, err = cli.Migrate(ctx, cli.MigrateOptions{DataDir: src.dir, DatabaseURL: dbURL, ObjectStorage: s3Options(bk, "p")})
		if err == nil || !strings.Contains(err.Error(), "no_png") {
			t.Fatalf("err = %v, want the constraint's failure", err)
		}
		if has, err := pg.HasData(); err != nil || has {
			t.Errorf("database after the failure: HasData = %v, %v; want empty", has, err)
		}
		list, err := bk.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bk.Name)})
		if err != nil || len(list.Contents) != 0 {
			t.Errorf("bucket after the failure holds %d objects (%v), want none", len(list.Contents), err)
		}
	})

	t.Run("settings are read as serve reads them", func(t *testing.T) {
		for _, c := range []struct {
			name string
			env  map[string]string
			args []string
			want string
		}{
			{"the database password file", map[string]string{"CONVSVC_DATABASE_PASSWORD_FILE": filepath.Join(t.TempDir(), "missing")},
				[]string{"--database", "postgres://convsvc@127.0.0.1:1/convsvc"}, "CONVSVC_DATABASE_PASSWORD_FILE"},
			{"a bad path style", nil, []string{"--object-storage", "s3://b/p", "--s3-path-style", "maybe"}, `--s3-path-style is "maybe": want true, false or auto`},
			{"no region", map[string]string{"AWS_REGION": "", "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"},
				[]string{"--object-storage", "s3://b/p"}, "needs a region"},
		} {
			t.Run(c.name, func(t *testing.T) {
				for k, v := range c.env {
					t.Setenv(k, v)
				}
				root := cli.NewRootCommand()
				root.SetArgs(append([]string{"admin", "migrate", "--data", src.dir}, c.args...))
				root.SetOut(io.Discard)
				root.SetErr(io.Discard)
				if err := root.Execute(); err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("migrate: %v, want an error naming %q", err, c.want)
				}
			})
		}
	})

	t.Run("a serving data dir is refused", func(t *testing.T) {
		st, err := store.Open(filepath.Join(src.dir, "convsvc.db"), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		_, err = cli.Migrate(ctx, cli.MigrateOptions{DataDir: src.dir, DatabaseURL: "postgres://127.0.0.1:1/none", LockTimeout: 50 * time.Millisecond})
		if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), "stop convsvc serve first") {
			t.Fatalf("err = %v, want ErrLocked saying to stop the server", err)
		}
	})

	t.Run("no target", func(t *testing.T) {
		if _, err := cli.Migrate(ctx, cli.MigrateOptions{DataDir: src.dir}); err == nil || !strings.Contains(err.Error(), "nothing to do") {
			t.Fatalf("err = %v, want nothing to do", err)
		}
	})
}

func countJobs(t *testing.T, pg *pgstore.Store) int {
	t.Helper()
	var n int
	if err := pg.Pool().QueryRow(context.Background(), `SELECT count(*) FROM jobs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkAccounts: the same ids, names, caps, created_at (to PostgreSQL's microsecond),
// reservations and monthly spend; each month's successes, none of which were copied, are
// purged successes.
func checkAccounts(t *testing.T, src *source, pg *pgstore.Store) {
	t.Helper()
	var n int
	if err := pg.Pool().QueryRow(context.Background(), `SELECT count(*) FROM accounts`).Scan(&n); err != nil || n != len(src.accounts) {
		t.Fatalf("target has %d accounts (%v), want %d", n, err, len(src.accounts))
	}
	for i, want := range src.accounts {
		g, err := pg.Account(want.ID)
		if err != nil {
			t.Fatalf("account %s on the target: %v", want.ID, err)
		}
		if g.ID != want.ID || g.Name != want.Name || g.SpendCapCents != want.SpendCapCents || g.ReservedCents != want.ReservedCents ||
			!g.CreatedAt.Equal(want.CreatedAt.Truncate(time.Microsecond)) {
			t.Errorf("account %d: got %+v, want %+v", i, g, want)
		}
		if !equalMonths(g.MonthlySpend, want.MonthlySpend) || !equalMonths(g.PurgedSuccesses, src.successMonth[want.ID]) {
			t.Errorf("account %s: spend %v purged %v, want spend %v purged %v", want.ID, g.MonthlySpend, g.PurgedSuccesses,
				want.MonthlySpend, src.successMonth[want.ID])
		}
	}
}

func equalMonths(a, b map[string]int64) bool {
	n := 0
	for m, v := range a {
		if v == 0 {
			continue
		}
		if b[m] != v {
			return false
		}
		n++
	}
	for _, v := range b {
		if v != 0 {
			n--
		}
	}
	return n == 0
}

// checkKeys: every live key authenticates on the target with its original secret, as the
// same key id; the revoked one does not; prefixes and hashes are the same.
func checkKeys(t *testing.T, src *source, pg *pgstore.Store) {
	t.Helper()
	for acct, secret := range src.keys {
		k, err := pg.Authenticate(secret)
		if err != nil || k.AccountID != acct {
			t.Errorf("key of %s on the target: %+v %v", acct, k, err)
		}
	}
	if _, err := pg.Authenticate(src.revoked); !errors.Is(err, store.ErrUnauthorized) {
		t.Errorf("revoked key on the target: %v, want ErrUnauthorized", err)
	}
	for _, want := range src.keyRecords {
		var acct, prefix string
		var hash []byte
		var revoked bool
		err := pg.Pool().QueryRow(context.Background(), `SELECT account_id, prefix, hash, revoked_at IS NOT NULL FROM api_keys WHERE id = $1`,
			want.ID).Scan(&acct, &prefix, &hash, &revoked)
		if err != nil {
			t.Errorf("key %s on the target: %v", want.ID, err)
			continue
		}
		if acct != want.AccountID || prefix != want.Prefix || !bytes.Equal(hash, want.Hash) || revoked != (want.RevokedAt != nil) {
			t.Errorf("key %s: got %s %s %x revoked=%v, want %+v", want.ID, acct, prefix, hash, revoked, want)
		}
	}
}

// checkJobs: unfinished jobs are there in their state (the running one queued, attempt
// kept), finished ones are not.
func checkJobs(t *testing.T, src *source, pg *pgstore.Store) {
	t.Helper()
	accountOf := map[string]string{}
	for _, id := range append(append(append([]string{}, src.created...), src.queued, src.running, src.cancelled), src.succeeded...) {
		var acct string
		if err := pg.Pool().QueryRow(context.Background(), `SELECT account_id FROM jobs WHERE id = $1`, id).Scan(&acct); err == nil {
			accountOf[id] = acct
		}
	}
	want := map[string]struct {
		status  string
		attempt int
	}{src.created[0]: {"created", 0}, src.created[1]: {"created", 0}, src.queued: {"queued", 0}, src.running: {"queued", 1}}
	for id, w := range want {
		job, err := pg.Job(accountOf[id], id)
		if err != nil || job.Status != w.status || job.Attempt != w.attempt {
			t.Errorf("job %s on the target: %s attempt %d (%v), want %s attempt %d", id, job.Status, job.Attempt, err, w.status, w.attempt)
		}
	}
	for _, id := range append([]string{src.cancelled}, src.succeeded...) {
		if _, ok := accountOf[id]; ok {
			t.Errorf("finished job %s was copied", id)
		}
	}
}
