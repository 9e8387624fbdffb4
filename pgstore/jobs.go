package pgstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/convsvc/convsvc/store"
)

// jobCols are the columns scanJob reads, in its order.
const jobCols = `id, seq, account_id, status, input_format, target_format, input_bytes, options, attempt,
	error_code, error_message, created_at, started_at, finished_at, expires_at, output_bytes, output_sha256,
	upload_size, upload_etag, upload_version_id, output_attempt, output_warnings, error_reason, source_url, deliver_to, output_verified,
	coalesce(input_sha256, ''), coalesce(cache_base, ''), output_cached, coalesce(output_object, ''), hit_cents`

// nullString is b as text, or NULL when b is nil.
func nullString(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// warningsJSON encodes an output's warnings for the output_warnings column: nil (NULL) when none.
func warningsJSON(out *store.Output) ([]byte, error) {
	if out == nil || len(out.Warnings) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(out.Warnings)
	if err != nil {
		return nil, fmt.Errorf("encode output warnings: %w", err)
	}
	return b, nil
}

// currentMonth is the ledger's month of the transaction's time, in UTC.
const currentMonth = `to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM')`

// scanJob reads one row of jobCols; no row is store.ErrNotFound.
func scanJob(row pgx.Row) (store.Job, error) {
	d := new(jobRow)
	if er, ok := row.(extraRow); ok {
		d.extra, row = er.extra, er.row // columns after the job's, decoded with them
	}
	err := row.Scan(d) // ScanRow
	if isNoRows(err) {
		return store.Job{}, store.ErrNotFound
	} else if err != nil {
		return store.Job{}, err
	}
	j := d.j
	j.Seq = uint64(d.seq)
	if d.opts != nil {
		j.Options = json.RawMessage(d.opts)
	}
	if d.outBytes != nil && d.outSHA != nil {
		j.Output = &store.Output{Bytes: *d.outBytes, SHA256: *d.outSHA, Verified: d.outVerified, Cached: d.outCached, Object: d.outObject}
		if d.outAttempt != nil {
			j.Output.Attempt = int(*d.outAttempt)
		}
		if d.outWarnings != nil {
			if err := json.Unmarshal([]byte(*d.outWarnings), &j.Output.Warnings); err != nil {
				return store.Job{}, fmt.Errorf("job %s: output_warnings: %w", j.ID, err)
			}
		}
	}
	if d.deliverTo != nil {
		j.DeliverTo = new(store.Delivery)
		if err := json.Unmarshal(d.deliverTo, j.DeliverTo); err != nil {
			return store.Job{}, fmt.Errorf("job %s: deliver_to: %w", j.ID, err)
		}
	}
	if d.upSize != nil {
		j.Upload = &store.Upload{Size: *d.upSize}
		if d.upETag != nil {
			j.Upload.ETag = *d.upETag
		}
		if d.upVersion != nil {
			j.Upload.VersionID = *d.upVersion
		}
	}
	j.CreatedAt, j.ExpiresAt = j.CreatedAt.UTC(), j.ExpiresAt.UTC()
	j.StartedAt, j.FinishedAt = utcPtr(j.StartedAt), utcPtr(j.FinishedAt)
	return j, nil
}

// jobRow is where scanJob reads a row of jobCols: the Job's own fields and the columns it
// assembles from, in one allocation.
type jobRow struct {
	j                      store.Job
	seq                    int64
	opts, deliverTo        []byte
	outBytes, upSize       *int64
	outSHA, outWarnings    *string
	upETag, upVersion      *string
	outAttempt             *int32
	outVerified, outCached bool
	outObject              string
	extra                  []any // the columns after jobCols' (extraRow)
}

// targets are d's fields in jobCols' order, then d.extra, for pgx's Scan.
func (d *jobRow) targets() []any {
	j := &d.j
	return append([]any{&j.ID, &d.seq, &j.AccountID, &j.Status, &j.InputFormat, &j.TargetFormat, &j.InputBytes, &d.opts,
		&j.Attempt, &j.ErrorCode, &j.ErrorMessage, &j.CreatedAt, &j.StartedAt, &j.FinishedAt, &j.ExpiresAt, &d.outBytes, &d.outSHA,
		&d.upSize, &d.upETag, &d.upVersion, &d.outAttempt, &d.outWarnings, &j.ErrorReason, &d.j.SourceURL, &d.deliverTo, &d.outVerified,
		&j.InputSHA256, &j.CacheBase, &d.outCached, &d.outObject, &j.HitCents}, d.extra...)
}

// ScanRow reads the row straight from its raw values (pgx.RowScanner), without the scan
// plans pgx builds for each row's columns (one or two allocations a column: most of a job
// read's allocations), and with the row's text in one string. It decodes what PostgreSQL
// sends for jobCols (binary int8, int4, bool, timestamptz, text and bytea; jsonb and text
// in either format) as pgx does; any other type or format, a NULL where d has no room for
// one, an infinite or out-of-range time, or another column count is read by pgx's own Scan,
// so its errors and conversions stay pgx's. TestScanJob_RawDecodeMatchesPgx holds the two
// to the same Job.
func (d *jobRow) ScanRow(rows pgx.Rows) error {
	fds, vals := rows.FieldDescriptions(), rows.RawValues()
	t := d.targets()
	if len(fds) != len(t) || len(vals) != len(t) {
		return rows.Scan(t...)
	}
	// The text columns' bytes, copied once into one string that each field slices.
	n := 0
	for i, v := range vals {
		if isText(fds[i]) {
			n += len(v)
		}
	}
	var sb strings.Builder
	sb.Grow(n)
	for i, v := range vals {
		if isText(fds[i]) {
			sb.Write(v)
		}
	}
	text, off := sb.String(), 0
	for i, v := range vals {
		fd := fds[i]
		var ok bool
		if isText(fd) {
			from := off
			off += len(v)
			switch p := t[i].(type) {
			case *string:
				*p, ok = text[from:off], v != nil
			case **string:
				ok = true
				if v == nil {
					*p = nil
				} else {
					s := text[from:off]
					*p = &s
				}
			case *[]byte: // jsonb (or json) as text: pgx copies it; bytea's text is hex, for pgx
				if ok = fd.Format == pgtype.TextFormatCode && fd.DataTypeOID != pgtype.ByteaOID; ok {
					if v == nil {
						*p = nil
					} else {
						*p = append(make([]byte, 0, len(v)), v...)
					}
				}
			}
		} else {
			ok = decodeRaw(fd, v, t[i])
		}
		if !ok {
			return rows.Scan(t...)
		}
	}
	return nil
}

// isText reports whether a column's raw value is its text: text or varchar in binary, or
// any type in the text format (jsonb, which pgx asks for as text, among them).
func isText(fd pgconn.FieldDescription) bool {
	return fd.Format == pgtype.TextFormatCode || fd.DataTypeOID == pgtype.TextOID || fd.DataTypeOID == pgtype.VarcharOID
}

// decodeRaw decodes a binary column v (nil: NULL) of fd's type into dst as pgx's Scan
// would; false when it does not know how (the caller then lets pgx scan the row).
func decodeRaw(fd pgconn.FieldDescription, v []byte, dst any) bool {
	if fd.Format != pgtype.BinaryFormatCode {
		return false
	}
	oid := fd.DataTypeOID
	switch p := dst.(type) {
	case *int64:
		n, ok := rawInt(oid, v)
		*p = n
		return ok
	case *int:
		n, ok := rawInt(oid, v)
		*p = int(n)
		return ok
	case **int64:
		if v == nil {
			*p = nil
			return true
		}
		n, ok := rawInt(oid, v)
		*p = &n
		return ok
	case **int32:
		if v == nil {
			*p = nil
			return true
		}
		if oid != pgtype.Int4OID {
			return false
		}
		n, ok := rawInt(oid, v)
		m := int32(n)
		*p = &m
		return ok
	case *bool:
		if oid != pgtype.BoolOID || len(v) != 1 {
			return false
		}
		*p = v[0] == 1
		return true
	case *time.Time:
		tm, ok := rawTime(oid, v)
		*p = tm
		return ok
	case **time.Time:
		if v == nil {
			*p = nil
			return true
		}
		tm, ok := rawTime(oid, v)
		*p = &tm
		return ok
	case *[]byte:
		if v == nil {
			*p = nil
			return true
		}
		switch {
		case oid == pgtype.ByteaOID:
		case oid == pgtype.JSONBOID && len(v) > 0 && v[0] == 1: // jsonb's version byte
			v = v[1:]
		default:
			return false
		}
		*p = append(make([]byte, 0, len(v)), v...)
		return true
	}
	return false
}

// rawInt is a binary int8, int4 or int2; false for NULL or another type.
func rawInt(oid uint32, v []byte) (int64, bool) {
	switch {
	case oid == pgtype.Int8OID && len(v) == 8:
		return int64(binary.BigEndian.Uint64(v)), true
	case oid == pgtype.Int4OID && len(v) == 4:
		return int64(int32(binary.BigEndian.Uint32(v))), true
	case oid == pgtype.Int2OID && len(v) == 2:
		return int64(int16(binary.BigEndian.Uint16(v))), true
	}
	return 0, false
}

// pgEpoch is 2000-01-01 UTC, where a binary timestamptz counts its microseconds from.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// rawTimeMin and rawTimeMax bound the binary timestamptz values rawTime decodes: years 1 to
// 9999, inside pgx's own range (4714 BC to 294276 AD), so pgx would give the same time.
var (
	rawTimeMin = (time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix() - pgEpoch.Unix()) * 1_000_000
	rawTimeMax = (time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()-pgEpoch.Unix())*1_000_000 - 1
)

// rawTime is a binary timestamptz as pgx makes it (time.Unix of the instant, the local zone:
// scanJob turns each into UTC); false for NULL, another type, infinity and years outside
// 1-9999 (pgx then reads it, or gives its error).
func rawTime(oid uint32, v []byte) (time.Time, bool) {
	if oid != pgtype.TimestamptzOID || len(v) != 8 {
		return time.Time{}, false
	}
	us := int64(binary.BigEndian.Uint64(v))
	if us > rawTimeMax || us < rawTimeMin {
		return time.Time{}, false
	}
	unix := us + pgEpoch.Unix()*1_000_000
	return time.Unix(unix/1_000_000, unix%1_000_000*1_000), true
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// ownLiveJob is the condition that finds one of the account's live jobs ($1 the job's id, $2
// the account's) by the primary key alone: the other conditions are one IS TRUE, which no
// index can serve. As plain conditions, a generic plan that PostgreSQL made while jobs was
// small (a new database, before its first ANALYZE) took jobs_account_status and read the
// account's whole history on every lookup for as long as the connection kept the plan
// (docs/decisions.md, migration 0028).
const ownLiveJob = `id = $1 AND (account_id = $2 AND expires_at > now()) IS TRUE`

// lockOwnJob reads and locks one of the account's live jobs; another account's job or an
// expired one is ErrNotFound.
func lockOwnJob(ctx context.Context, tx pgx.Tx, accountID, jobID string) (store.Job, error) {
	return scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE `+ownLiveJob+` FOR UPDATE`, jobID, accountID))
}

// lockAccount locks the account's row: what a transaction of the cache does before the
// cache's own locks (cache.go's lock order) when it may move the account's cents later.
func lockAccount(ctx context.Context, tx pgx.Tx, accountID string) error {
	_, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, accountID)
	return err
}

// lockAccounts locks the rows of the accounts of several jobs (ids may repeat) in one
// statement, in the ids' byte order, so that transactions taking several accounts' rows
// (ReapExpiredLeases, ExpireJobs) never wait for each other in a cycle. PostgreSQL locks a
// SELECT's rows FOR UPDATE as it returns them, that is in its ORDER BY's order.
func lockAccounts(ctx context.Context, tx pgx.Tx, accountIDs []string) error {
	_, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE id = ANY($1) ORDER BY id COLLATE "C" FOR UPDATE`, accountIDs)
	return err
}

// lockAccountSpend locks the account's row and returns its cap, reservations and this
// month's spend. The spend is read by a statement after the lock was granted, so it sees
// every finish that committed before (a finish moves a cent while holding the same lock).
func lockAccountSpend(ctx context.Context, tx pgx.Tx, accountID string) (capCents, reserved, spent int64, err error) {
	err = tx.QueryRow(ctx, `SELECT spend_cap_cents, reserved_cents FROM accounts WHERE id = $1 FOR UPDATE`, accountID).Scan(&capCents, &reserved)
	if isNoRows(err) {
		return 0, 0, 0, store.ErrNotFound
	} else if err != nil {
		return 0, 0, 0, err
	}
	err = tx.QueryRow(ctx, `SELECT coalesce((SELECT cents FROM month_spend WHERE account_id = $1 AND month = `+currentMonth+`), 0)`, accountID).Scan(&spent)
	return capCents, reserved, spent, err
}

// CreateJob reserves one cent and creates a job in state created; see store.Store.CreateJob.
// The cap check and the reservation happen under the account's row lock, so the cap is exact
// across nodes. With an Idempotency-Key, render runs inside the transaction and the key, the
// job and its reservation commit together.
func (s *Store) CreateJob(p store.CreateJobParams, render func(store.Job) (store.Response, error)) (store.Job, store.Response, error) {
	if p.InputBytes < 1 || p.InputBytes > store.MaxInputBytes {
		return store.Job{}, store.Response{}, fmt.Errorf("%w: input_bytes %d out of range", store.ErrInvalidArgument, p.InputBytes)
	}
	deliverTo := deliveryJSON(p.DeliverTo)
	status := store.StatusCreated
	if p.SourceURL != "" {
		status = store.StatusQueued // nothing to upload: a worker fetches the input
	}
	ctx, cancel := s.ctx()
	defer cancel()
	// Without an Idempotency-Key (its response is rendered inside the transaction), one call
	// of convsvc_create_job, which answers a cache hit too (migration 0019).
	if p.IdempotencyKey == "" {
		job, err := s.createJobCall(ctx, p, status)
		if !errors.Is(err, errFallback) {
			if err != nil {
				return store.Job{}, store.Response{}, wrap("create job", err)
			}
			if job.Finished() {
				s.reportFinished([]store.Job{job})
			}
			resp, err := render(job)
			if err != nil {
				return store.Job{}, store.Response{}, fmt.Errorf("render response: %w", err)
			}
			return job, resp, nil
		}
	}
	// An Idempotency-Key's create (or one the function left to Go, having run the gate)
	// counts its write on its own first.
	if err := s.passGate(ctx, p.Gate); err != nil {
		return store.Job{}, store.Response{}, err
	}
	var job store.Job
	var resp store.Response
	var renderErr error
	err := s.jobTx(ctx, func(tx pgx.Tx, fin *finished) error {
		job, resp, renderErr = store.Job{}, store.Response{}, nil
		capCents, reserved, spent, err := lockAccountSpend(ctx, tx, p.AccountID)
		if err != nil {
			return err
		}
		if p.IdempotencyKey != "" {
			jobID, found, err := s.idempotentResponse(ctx, tx, p.AccountID, p.IdempotencyKey, p.RequestHash, &resp)
			if err != nil {
				return err
			} else if found {
				job, err = scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1`, jobID))
				if err == store.ErrNotFound {
					err = nil // the job expired since; the replayed response still stands
				}
				return err
			}
		}
		if spent+reserved+1 > capCents {
			return fmt.Errorf("%w: %d spent and %d reserved of a %d cent cap this month", store.ErrLimitReached, spent, reserved, capCents)
		}
		if status == store.StatusQueued { // queued at create: max_queued holds as for a start
			if err := checkQueueRoom(ctx, tx, p.AccountID, 1); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE accounts SET reserved_cents = reserved_cents + 1 WHERE id = $1`, p.AccountID); err != nil {
			return err
		}
		var opts []byte
		if p.Options != nil {
			opts = p.Options
		}
		job, err = scanJob(tx.QueryRow(ctx, `INSERT INTO jobs (id, account_id, status, input_format, target_format, input_bytes, options, created_at, expires_at,
				source_url, deliver_to, started_at, input_sha256, cache_base)
			VALUES ($1, $2, $8, $3, $4, $5, $6, now(), now() + $7 * interval '1 microsecond', $9, $10, CASE WHEN $8 = 'queued' THEN now() END,
				nullif($11, ''), nullif($12, '')) RETURNING `+jobCols,
			store.NewJobID(time.Now()), p.AccountID, p.InputFormat, p.TargetFormat, p.InputBytes, opts, micros(s.opts.Retention),
			status, p.SourceURL, deliverTo, p.InputSHA256, p.CacheBase))
		if err != nil {
			return err
		}
		if err := putJobWebhook(ctx, tx, job, p.WebhookURL); err != nil {
			return err
		}
		if status == store.StatusCreated {
			// A cache hit is answered succeeded at once (cache.go).
			if hit, err := takeCached(ctx, tx, &job, s.opts.hitCents()); err != nil {
				return err
			} else if hit {
				if err := s.finish(ctx, tx, fin, &job, store.StatusSucceeded, "", "", job.Output); err != nil {
					return err
				}
			}
		}
		if status == store.StatusQueued {
			if err := notify(ctx, tx, "q:"+job.ID); err != nil {
				return err
			}
		}
		if p.IdempotencyKey == "" {
			return nil // rendered after the commit
		}
		if resp, err = render(job); err != nil {
			renderErr = fmt.Errorf("render response: %w", err)
			return renderErr
		}
		_, err = tx.Exec(ctx, `INSERT INTO idempotency_keys (account_id, key, request_hash, job_id, response_status, response_body, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, now())
			ON CONFLICT (account_id, key) DO UPDATE SET request_hash = excluded.request_hash, job_id = excluded.job_id,
				response_status = excluded.response_status, response_body = excluded.response_body, created_at = excluded.created_at`,
			p.AccountID, p.IdempotencyKey, p.RequestHash, job.ID, resp.Status, resp.Body)
		return err
	})
	if renderErr != nil {
		return store.Job{}, store.Response{}, renderErr
	}
	if err != nil {
		return store.Job{}, store.Response{}, wrap("create job", err)
	}
	if p.IdempotencyKey == "" {
		if resp, err = render(job); err != nil {
			return store.Job{}, store.Response{}, fmt.Errorf("render response: %w", err)
		}
	}
	return job, resp, nil
}

// idempotentResponse reads the first response under an Idempotency-Key that is still alive
// into resp and returns the id it created (a job's or a batch's); found is false when there is
// none, and a request other than hash's is ErrIdempotencyMismatch.
func (s *Store) idempotentResponse(ctx context.Context, tx pgx.Tx, accountID, key, hash string, resp *store.Response) (string, bool, error) {
	var storedHash, id string
	err := tx.QueryRow(ctx, `SELECT request_hash, job_id, response_status, response_body FROM idempotency_keys
		WHERE account_id = $1 AND key = $2 AND created_at > now() - $3 * interval '1 microsecond'`,
		accountID, key, micros(s.opts.IdempotencyTTL)).Scan(&storedHash, &id, &resp.Status, &resp.Body)
	switch {
	case isNoRows(err):
		*resp = store.Response{}
		return "", false, nil
	case err != nil:
		return "", false, err
	case storedHash != hash:
		return "", false, store.ErrIdempotencyMismatch
	}
	return id, true, nil
}

// Job returns one of the account's live jobs; another account's job or an expired one is ErrNotFound.
func (s *Store) Job(accountID, jobID string) (store.Job, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	job, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE `+ownLiveJob, jobID, accountID))
	return job, wrap("job", err)
}

// ListJobs returns a page of the account's live jobs, newest first, and whether more follow.
// A status filter reads the jobs_account_status index (account_id, status, seq DESC), the
// unfiltered list jobs_account (account_id, seq DESC), so a page reads the rows it returns
// and no others. A StartingAfter job that has expired since, or was deleted, still marks
// where the page starts (cursorSeq).
func (s *Store) ListJobs(accountID string, p store.ListParams) ([]store.Job, bool, error) {
	if p.Limit <= 0 {
		p.Limit = 20
	}
	ctx, cancel := s.ctx()
	defer cancel()
	var out []store.Job
	var hasMore bool
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, hasMore, err = listJobs(ctx, tx, accountID, p)
		return err
	})
	if err != nil {
		return nil, false, wrap("list jobs", err)
	}
	return out, hasMore, nil
}

// querier is what listJobs needs of a transaction (a test counts the rows its statements read).
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// listJobs is ListJobs in the caller's transaction.
func listJobs(ctx context.Context, tx querier, accountID string, p store.ListParams) ([]store.Job, bool, error) {
	out := []store.Job{}
	before, err := cursorSeq(ctx, tx, accountID, p.StartingAfter)
	if err != nil {
		return nil, false, err
	}
	// One statement per shape, each a plain range scan of its index whatever plan the
	// prepared statement gets: "($3 = '' OR status = $3)" would scan jobs_account.
	sql := `SELECT ` + jobCols + ` FROM jobs WHERE account_id = $1 AND expires_at > now()`
	args := []any{accountID, p.Limit + 1}
	if p.Status != "" {
		args = append(args, p.Status)
		sql += fmt.Sprintf(` AND status = $%d`, len(args))
	}
	if before >= 0 {
		args = append(args, before)
		sql += fmt.Sprintf(` AND seq < $%d`, len(args))
	}
	rows, err := tx.Query(ctx, sql+` ORDER BY seq DESC LIMIT $2`, args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	for rows.Next() {
		job, err := scanJob(rows)
		if err != nil {
			return nil, false, err
		}
		if len(out) == p.Limit {
			return out, true, nil
		}
		out = append(out, job)
	}
	return out, false, rows.Err()
}

// cursorSeq is where a page after the job with id starts: the account's jobs with a lower seq
// follow it; -1 (no cursor, or nothing newer than it survives) means every job. A job that
// still has its row (expired or not) gives its seq; one that retention deleted gives the
// position its id records, its creation time: the page continues with the jobs created in an
// earlier millisecond (store.JobIDBound), as on bbolt. Finding that position reads the
// account's jobs older than the cursor that still exist, which retention keeps few, since it
// deletes oldest first. Ids are made from the clock of the node that created the job (seq
// from the database's order), so nodes whose clocks disagree may shift that position by
// their difference. Another account's job, and an id that is no job's, are ErrNotFound.
func cursorSeq(ctx context.Context, tx querier, accountID, id string) (int64, error) {
	if id == "" {
		return -1, nil
	}
	var seq int64
	var owner string
	err := tx.QueryRow(ctx, `SELECT seq, account_id FROM jobs WHERE id = $1`, id).Scan(&seq, &owner)
	switch {
	case err == nil && owner == accountID:
		return seq, nil
	case err == nil:
		return 0, store.ErrNotFound // another account's job
	case !isNoRows(err):
		return 0, err
	}
	// A minute of slack for another node's clock, since the id carries its time.
	bound, ok := store.JobIDBound(id, time.Now().Add(time.Minute))
	if !ok {
		return 0, fmt.Errorf("%w: %q is not a job id", store.ErrNotFound, id)
	}
	err = tx.QueryRow(ctx, `SELECT seq FROM jobs WHERE account_id = $1 AND id COLLATE "C" >= $2 ORDER BY seq LIMIT 1`, accountID, bound).Scan(&seq)
	if isNoRows(err) {
		return -1, nil
	}
	return seq, err
}

// StartJob moves a created job whose upload holds uploadedSize bytes to queued; see
// store.Store.StartJob. A size other than input_bytes cancels the job with ErrSizeMismatch.
func (s *Store) StartJob(accountID, jobID string, uploadedSize int64) (store.Job, error) {
	return s.startJob(nil, accountID, jobID, uploadedSize, nil, "")
}

// StartSealedJob is StartJob that also records which object was sealed (Job.Upload), in the
// same transaction, when up names more than a size. up.Gate, when set, is run first in the
// same transaction (store.WriteGate).
func (s *Store) StartSealedJob(accountID, jobID string, up store.Upload) (store.Job, error) {
	g := up.Gate
	up.Gate = nil
	if up.ETag == "" && up.VersionID == "" {
		return s.startJob(g, accountID, jobID, up.Size, nil, up.SHA256)
	}
	return s.startJob(g, accountID, jobID, up.Size, &up, up.SHA256)
}

func (s *Store) startJob(g *store.WriteGate, accountID, jobID string, uploadedSize int64, up *store.Upload, sha string) (store.Job, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	// One call of convsvc_start_job, a cache hit included (migration 0019), with the
	// request's write gate first when it has one; a size or checksum mismatch, which cancels
	// the job, takes the Go transaction (the gate has run by then).
	if job, err := s.startJobCall(ctx, g, accountID, jobID, uploadedSize, up, sha); !errors.Is(err, errFallback) {
		if err != nil {
			return store.Job{}, wrap("start job", err)
		}
		if job.Finished() {
			s.reportFinished([]store.Job{job})
		}
		s.signal(job.ID)
		return job, nil
	}
	if err := s.passGate(ctx, g); err != nil { // the Go transactions (UseGoTransitions) only
		return store.Job{}, err
	}
	var job store.Job
	var mismatch, badSum bool
	err := s.jobTx(ctx, func(tx pgx.Tx, fin *finished) error {
		var err error
		mismatch, badSum = false, false
		if job, err = lockOwnJob(ctx, tx, accountID, jobID); err != nil {
			return err
		}
		if job.Status != store.StatusCreated {
			return nil
		}
		if uploadedSize != job.InputBytes {
			mismatch = true
			return s.finish(ctx, tx, fin, &job, store.StatusCancelled, "", fmt.Sprintf("uploaded %d bytes, reserved %d", uploadedSize, job.InputBytes), nil)
		}
		if badSum = store.ChecksumMismatch(&job, sha); badSum {
			return s.finish(ctx, tx, fin, &job, store.StatusCancelled, "", job.ErrorMessage, nil)
		}
		capCents, reserved, spent, err := lockAccountSpend(ctx, tx, accountID)
		if err != nil {
			return err
		}
		if spent+reserved > capCents {
			return fmt.Errorf("%w: %d spent and %d reserved of a %d cent cap this month", store.ErrLimitReached, spent, reserved, capCents)
		}
		var upSize *int64
		var upETag, upVersion *string
		if up != nil {
			upSize, upETag, upVersion = &up.Size, &up.ETag, &up.VersionID
		}
		if job.InputSHA256 != "" {
			if hit, err := takeCached(ctx, tx, &job, s.opts.hitCents()); err != nil {
				return err
			} else if hit {
				if _, err := tx.Exec(ctx, `UPDATE jobs SET started_at = now(), input_sha256 = $2, upload_size = $3, upload_etag = $4, upload_version_id = $5
					WHERE id = $1`, jobID, job.InputSHA256, upSize, upETag, upVersion); err != nil {
					return err
				}
				return s.finish(ctx, tx, fin, &job, store.StatusSucceeded, "", "", job.Output)
			}
		}
		job, err = scanJob(tx.QueryRow(ctx, `UPDATE jobs SET status = 'queued', started_at = now(),
			upload_size = $2, upload_etag = $3, upload_version_id = $4, input_sha256 = nullif($5, ''), cache_base = nullif($6, '')
			WHERE id = $1 AND `+queueRoomCond+` RETURNING `+jobCols,
			jobID, upSize, upETag, upVersion, job.InputSHA256, job.CacheBase))
		if err == store.ErrNotFound {
			return queueFull(ctx, tx, accountID)
		} else if err != nil {
			return err
		}
		return notify(ctx, tx, "q:"+job.ID)
	})
	if err != nil {
		return store.Job{}, wrap("start job", err)
	}
	s.signal(job.ID)
	if mismatch {
		return job, store.ErrSizeMismatch
	}
	if badSum {
		return job, store.ErrChecksumMismatch
	}
	return job, nil
}

// ClaimJob moves a queued job to running, leased to this node for Options.Lease, and counts
// the pickup in attempt: the oldest (first started first) of the next account in turn, round
// robin across the accounts with queued jobs, skipping those at max_running (claimFair).
// Concurrent claimers on any node skip each other's locked rows, so no job is claimed twice.
// ok is false when nothing is queued that may run.
// A queued job already past its expires_at is not claimed: it fails expired_or_exhausted in
// the same transaction, its reservation released (store.Store.ClaimJob's semantics).
func (s *Store) ClaimJob() (job store.Job, ok bool, err error) {
	ctx, cancel := s.ctx()
	defer cancel()
	if job, ok, err = s.claimJobCall(ctx); !errors.Is(err, errFallback) {
		if err != nil {
			return store.Job{}, false, wrap("claim job", err)
		}
		if !ok {
			return job, ok, nil
		}
		s.signal(job.ID)
		if job.Status == store.StatusSucceeded {
			// Answered from the cache (migration 0019's flight): the next job, in a
			// transaction of its own, so that no transaction holds two accounts' rows
			// (cache.go's lock order).
			s.reportFinished([]store.Job{job})
			return s.ClaimJob()
		}
		return job, ok, nil
	}
	for {
		var expired []string
		var hit bool
		err = s.jobTx(ctx, func(tx pgx.Tx, fin *finished) error {
			var err error
			ok, hit, expired = false, false, expired[:0]
			if job, ok, err = s.claimFair(ctx, tx, fin, &expired); err != nil || !ok {
				return err
			}
			// An identical job converted while this one waited: answered from the cache; or
			// one converts now: this one waits for it (single flight, cache.go). claimFair
			// locked the account of a job with a cache key before its status changed.
			if hit, err = flight(ctx, tx, &job, s.opts.hitCents()); err != nil || !hit {
				return err
			}
			return s.finish(ctx, tx, fin, &job, store.StatusSucceeded, "", "", job.Output)
		})
		if err != nil {
			return store.Job{}, false, wrap("claim job", err)
		}
		s.signal(expired...)
		if ok {
			s.signal(job.ID)
		}
		if !hit {
			return job, ok, nil
		}
		// Answered from the cache: the next job, in a transaction of its own, so that no
		// transaction holds two accounts' rows (cache.go's lock order).
	}
}

// expiredMessage is the error message of a job that reached expires_at before it finished.
const expiredMessage = "the job expired before it finished"

// expiredAt reports whether the job's expires_at has passed by the transaction's clock (the
// database's, as ExpireJobs reads it); a failed read counts as not expired, and the caller's
// next statement fails the same way.
func expiredAt(ctx context.Context, tx pgx.Tx, j store.Job) bool {
	var past bool
	if err := tx.QueryRow(ctx, `SELECT $1::timestamptz <= now()`, j.ExpiresAt).Scan(&past); err != nil {
		return false
	}
	return past
}

// Heartbeat renews this node's lease on a running job's attempt. It returns false when the
// job is no longer this node's to run (cancelled, expired, finished or claimed again after
// the lease lapsed): the worker should stop.
func (s *Store) Heartbeat(jobID string, attempt int) (bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET lease_expires_at = clock_timestamp() + $4 * interval '1 microsecond'
		WHERE id = $1 AND attempt = $2 AND status = 'running' AND lease_owner = $3`, jobID, attempt, s.opts.NodeID, micros(s.opts.Lease))
	if err != nil {
		return false, wrap("heartbeat", err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReapExpiredLeases requeues the running jobs whose lease lapsed (their node stopped or
// stalled), keeping their place in the queue, or fails them expired_or_exhausted once attempt
// reached maxAttempts, releasing their cents in the same transaction; a failed job's webhook
// deliveries are recorded in the same transaction, as finish records them. Every node may run it.
//
// Locks follow cache.go's order: the jobs first (SKIP LOCKED, so reapers on several nodes
// share the lapsed leases), then the rows of every account they belong to, sorted by id
// (lockAccounts), and only then the status changes, whose trigger takes each account's
// event_seqs row. Another node's reaper, and ExpireJobs, take the accounts of several jobs in
// the same order, so none of them waits for an account the other holds while holding one it
// needs.
func (s *Store) ReapExpiredLeases(maxAttempts int) (requeued, failed []string, err error) {
	ctx, cancel := s.ctx()
	defer cancel()
	err = s.jobTx(ctx, func(tx pgx.Tx, fin *finished) error {
		requeued, failed = nil, nil
		rows, err := tx.Query(ctx, `SELECT id, account_id FROM jobs
			WHERE status = 'running' AND lease_expires_at < clock_timestamp()
			ORDER BY lease_expires_at FOR UPDATE SKIP LOCKED LIMIT 500`)
		if err != nil {
			return err
		}
		var ids, accounts []string
		for rows.Next() {
			var id, account string
			if err := rows.Scan(&id, &account); err != nil {
				rows.Close()
				return err
			}
			ids, accounts = append(ids, id), append(accounts, account)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		if err := lockAccounts(ctx, tx, accounts); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `WITH failed AS (
				UPDATE jobs j SET status = 'failed', finished_at = now(), error_code = $3,
					error_message = format('the conversion was interrupted %s times (--max-attempts %s)', j.attempt, $2::int),
					lease_owner = NULL, lease_expires_at = NULL
				WHERE j.id = ANY($1) AND j.status = 'running' AND j.attempt >= $2 RETURNING j.id, j.account_id),
			released AS (
				UPDATE accounts a SET reserved_cents = a.reserved_cents - f.n
				FROM (SELECT account_id, count(*) AS n FROM failed GROUP BY account_id) f WHERE a.id = f.account_id),
			requeued AS (
				UPDATE jobs j SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL
				WHERE j.id = ANY($1) AND j.status = 'running' AND j.attempt < $2 RETURNING j.id)
			SELECT id, true FROM failed UNION ALL SELECT id, false FROM requeued`, ids, maxAttempts, store.CodeExpiredOrExhausted)
		if err != nil {
			return err
		}
		var payloads []string
		for rows.Next() {
			var id string
			var isFailed bool
			if err := rows.Scan(&id, &isFailed); err != nil {
				rows.Close()
				return err
			}
			if isFailed {
				failed = append(failed, id)
				payloads = append(payloads, "j:"+id)
			} else {
				requeued = append(requeued, id)
				payloads = append(payloads, "q:"+id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(failed) > 0 {
			// The failed jobs as this transaction left them: the end of their cache key's
			// flight, their webhook events (one per destination, the same as finish records
			// for any failure), their batch's count of finished jobs (and its batch.finished
			// event) and the FinishHook.
			rows, err := tx.Query(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = ANY($1) ORDER BY seq`, failed)
			if err != nil {
				return err
			}
			jobs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Job, error) { return scanJob(row) })
			if err != nil {
				return err
			}
			if len(jobs) != len(failed) {
				return fmt.Errorf("read back %d of the %d jobs it failed", len(jobs), len(failed))
			}
			for _, job := range jobs {
				// Its key's flight ends, as finish ends it: the in-flight row would stay until
				// an identical job's claim replaced it (a twin waits only for a running job).
				if err := endFlight(ctx, tx, job); err != nil {
					return err
				}
				if err := recordWebhookEvents(ctx, tx, job); err != nil {
					return err
				}
				if err := batchJobFinished(ctx, tx, job); err != nil {
					return err
				}
				fin.add(job)
			}
		}
		return notify(ctx, tx, payloads...)
	})
	if err != nil {
		return nil, nil, wrap("reap leases", err)
	}
	s.signal(append(requeued, failed...)...)
	return requeued, failed, nil
}

// FinishJob records how a running job's attempt ended: success turns its reservation into
// this month's spend, failure releases it. A job no longer running that attempt (cancelled,
// reaped, claimed again) is ErrInvalidState. A job whose expires_at has passed is not finished
// as reported: the same transaction fails it expired_or_exhausted (its reservation released,
// nothing charged) and FinishJob returns ErrNotFound, as store.Store.FinishJob does.
func (s *Store) FinishJob(jobID string, attempt int, o store.Outcome) (store.Job, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	if job, err := s.finishJobCall(ctx, jobID, attempt, o); !errors.Is(err, errFallback) {
		// The function (migration 0019) stored a cache-keyed success's entry and ended its
		// flight in the same transaction.
		if err != nil {
			return store.Job{}, wrap("finish job", err)
		}
		s.reportFinished([]store.Job{job})
		s.signal(job.ID)
		return job, nil
	}
	var job store.Job
	var expired bool
	err := s.jobTx(ctx, func(tx pgx.Tx, fin *finished) error {
		var err error
		expired = false
		if job, err = scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1 FOR UPDATE`, jobID)); err != nil {
			return err
		}
		if job.Status != store.StatusRunning || job.Attempt != attempt {
			return fmt.Errorf("%w: job is %s (attempt %d), not running attempt %d", store.ErrInvalidState, job.Status, job.Attempt, attempt)
		}
		if expiredAt(ctx, tx, job) {
			expired = true
			return s.finish(ctx, tx, fin, &job, store.StatusFailed, store.CodeExpiredOrExhausted, expiredMessage, nil)
		}
		if o.ErrorCode == "" {
			if o.Output == nil {
				return fmt.Errorf("%w: success without output", store.ErrInvalidArgument)
			}
			if err := s.finish(ctx, tx, fin, &job, store.StatusSucceeded, "", "", o.Output); err != nil {
				return err
			}
			return putCached(ctx, tx, job, s.opts.CacheMaxBytes)
		}
		job.ErrorReason = o.ErrorReason
		return s.finish(ctx, tx, fin, &job, store.StatusFailed, o.ErrorCode, o.ErrorMessage, nil)
	})
	if err != nil {
		return store.Job{}, wrap("finish job", err)
	}
	s.signal(job.ID)
	if expired {
		return store.Job{}, fmt.Errorf("%w: job %s expired at %s before it finished", store.ErrNotFound, job.ID, job.ExpiresAt.Format(time.RFC3339))
	}
	return job, nil
}

// RequeueJob puts a running job whose attempt could not store its output (a storage fault, not
// the input's) back in the queue in its original place, in one transaction. The attempt stays
// counted: once attempt has reached maxAttempts it fails conversion_failed with reason as its
// message (store.RequeueFailure), a job past its expires_at fails expired_or_exhausted, and
// either way its reservation is released in the same transaction. A job that is no longer
// running that attempt is ErrInvalidState. requeued says whether it went back to the queue.
func (s *Store) RequeueJob(jobID string, attempt, maxAttempts int, reason string) (job store.Job, requeued bool, err error) {
	ctx, cancel := s.ctx()
	defer cancel()
	err = s.jobTx(ctx, func(tx pgx.Tx, fin *finished) error {
		var err error
		requeued = false
		if job, err = scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1 FOR UPDATE`, jobID)); err != nil {
			return err
		}
		if job.Status != store.StatusRunning || job.Attempt != attempt {
			return fmt.Errorf("%w: job is %s (attempt %d), not running attempt %d", store.ErrInvalidState, job.Status, job.Attempt, attempt)
		}
		switch {
		case expiredAt(ctx, tx, job):
			return s.finish(ctx, tx, fin, &job, store.StatusFailed, store.CodeExpiredOrExhausted, expiredMessage, nil)
		case job.Attempt >= maxAttempts:
			msg := store.RequeueFailure(reason, job.Attempt, maxAttempts)
			return s.finish(ctx, tx, fin, &job, store.StatusFailed, store.CodeConversionFailed, msg, nil)
		}
		if job, err = scanJob(tx.QueryRow(ctx, `UPDATE jobs SET status = 'queued', started_at = coalesce(started_at, now()),
				lease_owner = NULL, lease_expires_at = NULL
			WHERE id = $1 RETURNING `+jobCols, jobID)); err != nil {
			return err
		}
		requeued = true
		return notify(ctx, tx, "q:"+job.ID)
	})
	if err != nil {
		return store.Job{}, false, wrap("requeue job", err)
	}
	s.signal(job.ID)
	return job, requeued, nil
}

// CancelJob cancels one of the account's unfinished jobs and releases its reservation.
// Cancelling a cancelled job returns it unchanged; a succeeded or failed job is ErrInvalidState.
func (s *Store) CancelJob(accountID, jobID string) (store.Job, error) {
	return s.CancelJobWith(accountID, jobID, nil)
}

// CancelJobWith is CancelJob with the request's write gate (keycache.go), which the cancel's
// call runs first in its own round trip (migration 0031's function: one round trip for a key
// the node keeps); the cases the function leaves to the Go transaction run the gate on its
// own first.
func (s *Store) CancelJobWith(accountID, jobID string, g *store.WriteGate) (store.Job, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	if job, changed, err := s.cancelJobCall(ctx, g, accountID, jobID); !errors.Is(err, errFallback) {
		if err != nil {
			return store.Job{}, wrap("cancel job", err)
		}
		if changed {
			s.reportFinished([]store.Job{job})
		}
		s.signal(job.ID)
		return job, nil
	}
	if err := s.passGate(ctx, g); err != nil {
		return store.Job{}, err
	}
	var job store.Job
	err := s.jobTx(ctx, func(tx pgx.Tx, fin *finished) error {
		var err error
		if job, err = lockOwnJob(ctx, tx, accountID, jobID); err != nil {
			return err
		}
		switch job.Status {
		case store.StatusCancelled:
			return nil
		case store.StatusSucceeded, store.StatusFailed:
			return fmt.Errorf("%w: job already %s", store.ErrInvalidState, job.Status)
		}
		return s.finish(ctx, tx, fin, &job, store.StatusCancelled, "", "", nil)
	})
	if err != nil {
		return store.Job{}, wrap("cancel job", err)
	}
	s.signal(job.ID)
	return job, nil
}

// finish moves a locked unfinished job to a final state with its spend movement and webhook
// deliveries, in tx, and records it in fin for the FinishHook.
func (s *Store) finish(ctx context.Context, tx pgx.Tx, fin *finished, job *store.Job, status, code, message string, out *store.Output) error {
	switch job.Status {
	case store.StatusCreated, store.StatusQueued, store.StatusRunning:
	default:
		return fmt.Errorf("%w: job %s already %s", store.ErrInvalidState, job.ID, job.Status)
	}
	tag, err := tx.Exec(ctx, `UPDATE accounts SET reserved_cents = reserved_cents - 1 WHERE id = $1 AND reserved_cents >= 1`, job.AccountID)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("ledger broken: account %s has no reservation for job %s", job.AccountID, job.ID)
	}
	var outBytes *int64
	var outSHA *string
	var outAttempt *int
	var outWarnings []byte
	outVerified, outCached, outObject := false, false, ""
	var hitCents *int64
	if status == store.StatusSucceeded {
		hitCents = job.HitCents
		if _, err := tx.Exec(ctx, `INSERT INTO month_spend (account_id, month, cents) VALUES ($1, `+currentMonth+`, $2)
			ON CONFLICT (account_id, month) DO UPDATE SET cents = month_spend.cents + excluded.cents`, job.AccountID, job.Charge()); err != nil {
			return err
		}
		outBytes, outSHA, outAttempt = &out.Bytes, &out.SHA256, &job.Attempt
		if out.Object != "" {
			outAttempt = &out.Attempt // the attempt of the job that wrote the cached output
		}
		outVerified, outCached, outObject = out.Verified, out.Cached, out.Object
		if outWarnings, err = warningsJSON(out); err != nil {
			return err
		}
	}
	if message == "" {
		message = job.ErrorMessage
	}
	updated, err := scanJob(tx.QueryRow(ctx, `UPDATE jobs SET status = $2, finished_at = now(), error_code = $3, error_message = $4,
			output_bytes = $5, output_sha256 = $6, output_attempt = $7, output_warnings = $8, error_reason = $9, output_verified = $10,
			output_cached = $11, output_object = nullif($12, ''), input_sha256 = nullif($13, ''), hit_cents = $14,
			lease_owner = NULL, lease_expires_at = NULL
		WHERE id = $1 RETURNING `+jobCols, job.ID, status, code, message, outBytes, outSHA, outAttempt, nullString(outWarnings), job.ErrorReason, outVerified,
		outCached, outObject, job.InputSHA256, hitCents))
	if err != nil {
		return err
	}
	*job = updated
	if err := endFlight(ctx, tx, *job); err != nil {
		return err
	}
	if err := recordWebhookEvents(ctx, tx, *job); err != nil {
		return err
	}
	if err := batchJobFinished(ctx, tx, *job); err != nil {
		return err
	}
	fin.add(*job)
	payloads := []string{"j:" + job.ID}
	if status == store.StatusCancelled {
		payloads = append(payloads, "c:"+job.ID)
	}
	return notify(ctx, tx, payloads...)
}

// ExpireJobs deletes up to limit jobs whose expires_at has passed (by the database's clock);
// an unfinished one first fails expired_or_exhausted, releasing its reservation, and a
// succeeded one's charge (store.Job.Charge) is counted in its month's purged_successes so the
// ledger stays checkable. It
// returns the deleted ids so their files go too, and more when limit was reached.
func (s *Store) ExpireJobs(limit int) (deleted []string, more bool, err error) {
	ctx, cancel := s.ctx()
	defer cancel()
	err = s.jobTx(ctx, func(tx pgx.Tx, fin *finished) error {
		deleted, more = nil, false
		rows, err := tx.Query(ctx, `SELECT `+jobCols+` FROM jobs WHERE expires_at <= now()
			ORDER BY expires_at, seq LIMIT $1 FOR UPDATE SKIP LOCKED`, limit)
		if err != nil {
			return err
		}
		jobs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Job, error) { return scanJob(row) })
		if err != nil {
			return err
		}
		// The accounts whose cents move, in id order before the first finish (as the lease
		// reaper takes them), not one by one in the jobs' order.
		var accounts []string
		for _, job := range jobs {
			if !job.Finished() {
				accounts = append(accounts, job.AccountID)
			}
		}
		if err := lockAccounts(ctx, tx, accounts); err != nil {
			return err
		}
		for _, job := range jobs {
			switch job.Status {
			case store.StatusCreated, store.StatusQueued, store.StatusRunning:
				if err := s.finish(ctx, tx, fin, &job, store.StatusFailed, store.CodeExpiredOrExhausted, expiredMessage, nil); err != nil {
					return err
				}
			case store.StatusSucceeded:
				if _, err := tx.Exec(ctx, `INSERT INTO month_spend (account_id, month, purged_successes) VALUES ($1, $2, $3)
					ON CONFLICT (account_id, month) DO UPDATE SET purged_successes = month_spend.purged_successes + excluded.purged_successes`,
					job.AccountID, store.MonthOf(*job.FinishedAt), job.Charge()); err != nil {
					return err
				}
			}
			deleted = append(deleted, job.ID)
		}
		if len(deleted) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `DELETE FROM jobs WHERE id = ANY($1)`, deleted); err != nil {
			return err
		}
		if err := releaseOutputs(ctx, tx, jobs); err != nil {
			return err
		}
		// A batch goes with its jobs (they share its expires_at).
		if _, err := tx.Exec(ctx, `DELETE FROM batches b WHERE b.expires_at <= now()
			AND NOT EXISTS (SELECT 1 FROM batch_jobs bj WHERE bj.batch_id = b.id)`); err != nil {
			return err
		}
		payloads := make([]string, len(deleted))
		for i, id := range deleted {
			payloads[i] = "j:" + id
		}
		more = len(deleted) == limit
		return notify(ctx, tx, payloads...)
	})
	if err != nil {
		return nil, false, wrap("expire jobs", err)
	}
	s.signal(deleted...)
	return deleted, more, nil
}

// PurgeIdempotencyKeys forgets Idempotency-Keys older than their time to live.
func (s *Store) PurgeIdempotencyKeys() (int, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at <= now() - $1 * interval '1 microsecond'`, micros(s.opts.IdempotencyTTL))
	if err != nil {
		return 0, wrap("purge idempotency keys", err)
	}
	return int(tag.RowsAffected()), nil
}

// JobExists reports whether a job record exists (expired or not), or the conversion cache
// still holds its output: Unowned of the one id.
func (s *Store) JobExists(jobID string) (bool, error) {
	gone, err := s.Unowned([]string{jobID})
	return err == nil && len(gone) == 0, err
}

// Unowned returns those of ids that have no job record and no cached output's reference, in
// their order, in one statement: the orphan sweep checks a listing's ids with it, a batch at
// a time, instead of a round trip per file.
func (s *Store) Unowned(ids []string) ([]string, error) {
	return s.pickIDs("unowned", ids, `WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = u.id)
		AND NOT EXISTS (SELECT 1 FROM cache_refs WHERE cache_refs.object = u.id)`)
}

// pickIDs returns those of ids that the rest of a query over them (u: unnest of the ids,
// u.id each) keeps, in their order, in one statement; what names the call in its errors.
func (s *Store) pickIDs(what string, ids []string, rest string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ctx, cancel := s.ctx()
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT u.id FROM unnest($1::text[]) WITH ORDINALITY AS u(id, n) `+rest+` ORDER BY u.n`, ids)
	if err != nil {
		return nil, wrap(what, err)
	}
	picked, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return picked, wrap(what, err)
}

// JobUploadState tells object storage whether a PUT may land for the job
// (store.Store.JobUploadState's semantics): a finished job, or one past expires_at by the
// database's clock, is UploadClosed; a started one UploadSealed; a created one UploadOpen; no
// job UploadGone.
func (s *Store) JobUploadState(jobID string) (store.UploadState, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var status string
	var started, expired bool
	err := s.pool.QueryRow(ctx, `SELECT status, started_at IS NOT NULL, expires_at <= now() FROM jobs WHERE id = $1`, jobID).
		Scan(&status, &started, &expired)
	if isNoRows(err) {
		return store.UploadGone, nil
	} else if err != nil {
		return store.UploadGone, wrap("job upload state", err)
	}
	probe := store.Job{Status: status}
	switch {
	case expired || probe.Finished():
		return store.UploadClosed, nil
	case started || status != store.StatusCreated:
		return store.UploadSealed, nil
	default:
		return store.UploadOpen, nil
	}
}

// ClosedUploads returns those of ids whose JobUploadState is UploadClosed (finished, or past
// expires_at by the database's clock), in their order, in one statement: the sweep of dead
// inputs checks a listing's ids with it, a batch at a time.
func (s *Store) ClosedUploads(ids []string) ([]string, error) {
	return s.pickIDs("closed uploads", ids, `JOIN jobs j ON j.id = u.id
		WHERE j.status IN ('succeeded', 'failed', 'cancelled') OR j.expires_at <= now()`)
}

// NextExpiry is the earliest expires_at of any stored job, and false when there is none: the
// sweeper sleeps until then.
func (s *Store) NextExpiry() (time.Time, bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var at *time.Time
	if err := s.pool.QueryRow(ctx, `SELECT min(expires_at) FROM jobs`).Scan(&at); err != nil {
		return time.Time{}, false, wrap("next expiry", err)
	}
	if at == nil {
		return time.Time{}, false, nil
	}
	return at.UTC(), true, nil
}
