package cli

// The copy behind `convsvc admin migrate` (migrate.go has the command): a stopped service's
// data dir (the bbolt file and the local blob store) into PostgreSQL, into S3-compatible
// object storage, or into both, so a self-hoster who moves up keeps their accounts, keys and
// ledger. It lives in cli because cli may import every storage package (the layout rule
// of convert/layout_test.go); its tests are in cli/migratetest, which runs PostgreSQL and S3.
//
// What is copied: every account (id, name, spend cap, created_at, reservations), every key
// (id, prefix, SHA-256 hash, created_at, revoked_at; secrets were never stored), each
// account's monthly spend and purged-success counts, and every unfinished job (created,
// queued, running) with every field, a running one put back in the queue with its attempt
// count kept, and its input file (when it has one) to PREFIX/uploads/{id}. Finished jobs
// (succeeded, failed, cancelled) and outputs are not copied: each success not copied is
// added to its month's purged-success count, exactly as retention does, so the target's
// ledger still adds up. Idempotency keys and rate windows are not copied.
//
// Webhooks: every endpoint with its secret (exactly, so receivers keep verifying with the
// secret they have), health and times; every account's signing secret; the webhook_url of
// each copied job; and every pending (undelivered) delivery, a claimed one released to be
// due at once. Delivered and failed deliveries (the history the admin API lists) are not
// copied.
//
// The database part is one PostgreSQL transaction that ends with a ledger check, so a
// failure leaves the database as it was. Objects copied before a failure are deleted again.

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/s3store"
	"github.com/convsvc/convsvc/store"
)

// migrateOpenTimeout bounds connecting to PostgreSQL and applying its migrations.
const migrateOpenTimeout = time.Minute

// ErrMigrateTargetNotEmpty means a target already holds accounts, keys, jobs or job objects and
// Options.Replace was not set.
var ErrMigrateTargetNotEmpty = errors.New("the target already holds data")

// MigrateOptions say what Migrate copies where.
type MigrateOptions struct {
	// DataDir is the stopped service's data dir: DataDir/convsvc.db and DataDir/blobs.
	DataDir string
	// DatabaseURL is the PostgreSQL target (postgres://...); empty leaves the database out.
	DatabaseURL string
	// ObjectStorage is the S3 target; nil leaves the files out.
	ObjectStorage *s3store.Options
	// Replace deletes what a target already holds (its accounts, keys, jobs, spend, and the
	// job objects under the prefix) before copying, instead of refusing it.
	Replace bool
	// LockTimeout bounds the wait for the bbolt file's lock (default 2 s): a running service
	// holds it, and migrate refuses to copy a data dir that is in use.
	LockTimeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// MigrateReport counts what Migrate copied.
type MigrateReport struct {
	Accounts       int
	Keys           int
	RevokedKeys    int
	Months         int // account-months of spend history written to the database
	UnfinishedJobs int // created, queued and running jobs copied
	Requeued       int // of them, running jobs put back in the queue
	Inputs         int // input files copied to object storage
	InputBytes     int64
	MissingInputs  []string // started jobs whose input file was not in the data dir
	// Uploads is what S3 answered for each input copied (size, ETag, version id): what Seal
	// records at start, for when the job store keeps it for started jobs.
	Uploads      map[string]s3store.UploadInfo
	FinishedJobs int   // finished jobs not copied
	PurgedAdded  int64 // successes among them, added to the months' purged-success counts
	// WebhookEndpoints, WebhookSigningSecrets, JobWebhooks (copied jobs' webhook_url) and
	// PendingDeliveries are the webhook records copied; DeliveryHistory counts the delivered
	// and failed deliveries not copied.
	WebhookEndpoints      int
	WebhookSigningSecrets int
	JobWebhooks           int
	PendingDeliveries     int
	DeliveryHistory       int
	// Presets is the presets copied.
	Presets int
}

// parseObjectStorage parses s3://BUCKET/PREFIX into the bucket and the key prefix.
func parseObjectStorage(raw string) (bucket, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("object storage %q: %w", raw, err)
	}
	if u.Scheme != "s3" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", "", fmt.Errorf("object storage %q: want s3://BUCKET or s3://BUCKET/PREFIX", raw)
	}
	return u.Host, strings.Trim(u.Path, "/"), nil
}

// Migrate copies the data dir into the targets and verifies them; see the comment at the
// top of this file.
func Migrate(ctx context.Context, o MigrateOptions) (MigrateReport, error) {
	var rep MigrateReport
	if o.DatabaseURL == "" && o.ObjectStorage == nil {
		return rep, errors.New("nothing to do: give a database (--database postgres://...) and/or object storage (--object-storage s3://BUCKET/PREFIX)")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	dbPath := filepath.Join(o.DataDir, "convsvc.db")
	if _, err := os.Stat(dbPath); err != nil {
		return rep, fmt.Errorf("data dir %s: %w", o.DataDir, err)
	}
	src, err := store.OpenReadOnly(dbPath, store.Options{LockTimeout: o.LockTimeout, Now: o.Now})
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return rep, fmt.Errorf("%w; migrate reads a stopped service's data dir: stop convsvc serve first", err)
		}
		return rep, err
	}
	defer src.Close()
	if err := src.VerifyLedger(); err != nil {
		return rep, fmt.Errorf("the data dir's ledger does not add up, nothing copied: %w", err)
	}
	dump, err := src.Dump()
	if err != nil {
		return rep, err
	}
	data, rep := planMigration(dump, o.Now().UTC())

	var pg *pgstore.Store
	if o.DatabaseURL != "" {
		openCtx, cancel := context.WithTimeout(ctx, migrateOpenTimeout)
		pg, err = pgstore.Open(openCtx, o.DatabaseURL, pgstore.Options{})
		cancel()
		if err != nil {
			return rep, err
		}
		defer pg.Close()
		has, err := pg.HasData()
		if err != nil {
			return rep, err
		}
		if has && !o.Replace {
			return rep, fmt.Errorf("database: %w (accounts, keys or jobs); nothing copied", ErrMigrateTargetNotEmpty)
		}
	}
	var objs *s3store.Store
	if o.ObjectStorage != nil {
		if objs, err = s3store.New(*o.ObjectStorage); err != nil {
			return rep, err
		}
		if err := objs.Check(); err != nil {
			return rep, err
		}
		ids, err := objs.JobIDs()
		if err != nil {
			return rep, err
		}
		if len(ids) > 0 && !o.Replace {
			return rep, fmt.Errorf("object storage: %w (objects of %s under the prefix); nothing copied", ErrMigrateTargetNotEmpty, plural(len(ids), "job", "jobs"))
		}
		for _, id := range ids {
			if err := objs.Delete(id); err != nil {
				return rep, fmt.Errorf("replace object storage: %w", err)
			}
		}
	}

	var copied []string
	undo := func() {
		for _, id := range copied {
			_ = objs.Delete(id) // best effort: the sweeper of a serving node removes objects without a job
		}
	}
	if objs != nil {
		for i, job := range data.Jobs {
			info, found, err := copyInput(ctx, objs, filepath.Join(o.DataDir, "blobs"), job.ID)
			if err != nil {
				undo()
				return rep, err
			}
			if !found {
				if job.Status != store.StatusCreated {
					rep.MissingInputs = append(rep.MissingInputs, job.ID)
				}
				continue
			}
			copied = append(copied, job.ID)
			if rep.Uploads == nil {
				rep.Uploads = map[string]s3store.UploadInfo{}
			}
			rep.Uploads[job.ID] = info
			if job.Status != store.StatusCreated {
				// Started: the import records the copied object as the start's seal, so the
				// worker reads exactly it (a created job is sealed when it starts).
				data.Jobs[i].Upload = &store.Upload{Size: info.Size, ETag: info.ETag, VersionID: info.VersionID}
			}
			rep.Inputs++
			rep.InputBytes += info.Size
		}
	}
	if pg != nil {
		counts, err := pg.Import(ctx, data, o.Replace)
		if err != nil {
			undo()
			return rep, fmt.Errorf("database (nothing written there): %w", err)
		}
		rep.Months = counts.Months
		if err := verifyDatabase(ctx, pg, data); err != nil {
			return rep, fmt.Errorf("verify the database after copying: %w", err)
		}
	}
	return rep, nil
}

// planMigration turns the dump into what is imported: accounts and keys as they are, unfinished jobs
// (running ones requeued), and the successes of the finished jobs left behind added to
// their months' purged-success counts (each its charge: a cache hit's price); nothing of the
// conversion cache, whose outputs are the finished jobs' (not copied); webhook endpoints and
// signing secrets as they are, the copied jobs' webhook_url, and the pending deliveries (a
// claimed one due again at now).
func planMigration(d store.Dump, now time.Time) (pgstore.ImportData, MigrateReport) {
	rep := MigrateReport{Accounts: len(d.Accounts), Keys: len(d.Keys)}
	for _, k := range d.Keys {
		if k.RevokedAt != nil {
			rep.RevokedKeys++
		}
	}
	purged := map[string]map[string]int64{}
	var jobs []store.Job
	for _, j := range d.Jobs {
		switch j.Status {
		case store.StatusCreated, store.StatusQueued:
		case store.StatusRunning:
			// Its worker is gone with the old process: back to the queue, attempt kept, as
			// start-up recovery and the lease reaper do.
			j.Status = store.StatusQueued
			if j.StartedAt == nil {
				t := j.CreatedAt
				j.StartedAt = &t
			}
			rep.Requeued++
		default:
			rep.FinishedJobs++
			if j.Status == store.StatusSucceeded && j.FinishedAt != nil {
				if purged[j.AccountID] == nil {
					purged[j.AccountID] = map[string]int64{}
				}
				purged[j.AccountID][store.MonthOf(*j.FinishedAt)] += j.Charge() // a cache hit's price, as retention counts it
				rep.PurgedAdded++
			}
			continue
		}
		jobs = append(jobs, j)
	}
	rep.UnfinishedJobs = len(jobs)
	accts := slices.Clone(d.Accounts)
	for i := range accts {
		add := purged[accts[i].ID]
		if len(add) == 0 {
			continue
		}
		months := map[string]int64{}
		for m, n := range accts[i].PurgedSuccesses {
			months[m] = n
		}
		for m, n := range add {
			months[m] += n
		}
		accts[i].PurgedSuccesses = months
	}
	data := pgstore.ImportData{Accounts: accts, Keys: d.Keys, Jobs: jobs,
		WebhookEndpoints: d.WebhookEndpoints, WebhookSigningSecrets: d.WebhookSigningSecrets,
		JobWebhooks: map[string]string{}, Presets: d.Presets}
	for _, j := range jobs {
		if url := d.JobWebhooks[j.ID]; url != "" {
			data.JobWebhooks[j.ID] = url
		}
	}
	for _, w := range d.WebhookDeliveries {
		if w.State != store.DeliveryPending {
			rep.DeliveryHistory++
			continue
		}
		if w.Claimed {
			// Its dispatcher is gone with the old process: due again now, as start-up does
			// (store.ResetWebhookClaims); the attempt it counted stays counted.
			w.Claimed, w.NextAttemptAt = false, now
		}
		data.WebhookDeliveries = append(data.WebhookDeliveries, w)
	}
	rep.WebhookEndpoints, rep.WebhookSigningSecrets = len(data.WebhookEndpoints), len(data.WebhookSigningSecrets)
	rep.JobWebhooks, rep.PendingDeliveries = len(data.JobWebhooks), len(data.WebhookDeliveries)
	rep.Presets = len(data.Presets)
	return data, rep
}

// copyInput copies the job's input file from the local blob store under blobDir (the sealed
// inputs/{id} of an older version, else uploads/{id}) to the job's upload key, then reads
// the object back and compares SHA-256s. found is false when the job has no file.
func copyInput(ctx context.Context, objs *s3store.Store, blobDir, jobID string) (info s3store.UploadInfo, found bool, err error) {
	var f *os.File
	for _, dir := range []string{"inputs", "uploads"} {
		f, err = os.Open(filepath.Join(blobDir, dir, jobID))
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return s3store.UploadInfo{}, false, fmt.Errorf("input of %s: %w", jobID, err)
		}
	}
	if f == nil {
		return s3store.UploadInfo{}, false, nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return s3store.UploadInfo{}, false, fmt.Errorf("input of %s: %w", jobID, err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return s3store.UploadInfo{}, false, fmt.Errorf("input of %s: %w", jobID, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return s3store.UploadInfo{}, false, fmt.Errorf("input of %s: %w", jobID, err)
	}
	info, err = objs.ImportInput(ctx, jobID, f, st.Size())
	if err != nil {
		return s3store.UploadInfo{}, false, err
	}
	back, err := objs.OpenInput(jobID, info)
	if err != nil {
		return s3store.UploadInfo{}, false, fmt.Errorf("read back the input of %s: %w", jobID, err)
	}
	defer back.Close()
	h2 := sha256.New()
	if _, err := io.Copy(h2, back); err != nil {
		return s3store.UploadInfo{}, false, fmt.Errorf("read back the input of %s: %w", jobID, err)
	}
	if string(h.Sum(nil)) != string(h2.Sum(nil)) {
		return s3store.UploadInfo{}, false, fmt.Errorf("input of %s: the object read back differs from the file", jobID)
	}
	return info, true, nil
}

// verifyDatabase checks the committed database: the ledger holds (pgstore.VerifyLedger)
// and it has exactly the accounts, keys, jobs and webhook records copied.
func verifyDatabase(ctx context.Context, pg *pgstore.Store, d pgstore.ImportData) error {
	if err := pg.VerifyLedger(); err != nil {
		return err
	}
	var accounts, keys, jobs int
	err := pg.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM accounts), (SELECT count(*) FROM api_keys), (SELECT count(*) FROM jobs)`).
		Scan(&accounts, &keys, &jobs)
	if err != nil {
		return fmt.Errorf("count: %w", err)
	}
	if accounts != len(d.Accounts) || keys != len(d.Keys) || jobs != len(d.Jobs) {
		return fmt.Errorf("the database has %s, %s, %s; %d, %d, %d were copied",
			plural(accounts, "account", "accounts"), plural(keys, "key", "keys"), plural(jobs, "job", "jobs"), len(d.Accounts), len(d.Keys), len(d.Jobs))
	}
	var endpoints, secrets, jobURLs, pending int
	err = pg.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM webhook_endpoints), (SELECT count(*) FROM webhook_signing_secrets),
		(SELECT count(*) FROM job_webhooks), (SELECT count(*) FROM webhook_deliveries WHERE state = 'pending')`).
		Scan(&endpoints, &secrets, &jobURLs, &pending)
	if err != nil {
		return fmt.Errorf("count webhooks: %w", err)
	}
	if endpoints != len(d.WebhookEndpoints) || secrets != len(d.WebhookSigningSecrets) || jobURLs != len(d.JobWebhooks) || pending != len(d.WebhookDeliveries) {
		return fmt.Errorf("the database has %s, %s, %s, %s; %d, %d, %d, %d were copied",
			plural(endpoints, "webhook endpoint", "webhook endpoints"), plural(secrets, "signing secret", "signing secrets"),
			plural(jobURLs, "job webhook_url", "job webhook_urls"), plural(pending, "pending delivery", "pending deliveries"), len(d.WebhookEndpoints), len(d.WebhookSigningSecrets), len(d.JobWebhooks), len(d.WebhookDeliveries))
	}
	var presets int
	if err := pg.Pool().QueryRow(ctx, `SELECT count(*) FROM presets`).Scan(&presets); err != nil {
		return fmt.Errorf("count presets: %w", err)
	}
	if presets != len(d.Presets) {
		return fmt.Errorf("the database has %s; %d were copied", plural(presets, "preset", "presets"), len(d.Presets))
	}
	return nil
}
