package store

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	bolt "go.etcd.io/bbolt"
)

// Backup writes a consistent copy of the whole database to w. The copy is the state of a single
// instant: one read transaction writes it into a temporary file beside the database, at disk
// speed, and ends; only then is the file streamed to w. No transaction is held while w's reader
// takes its time, so writers carry on (bbolt cannot grow its file while a read transaction
// is open, and a backup read at 16 KiB/s once stalled every write). The temporary file is
// unlinked at once where the system allows it, so a crash leaves nothing behind. size, when
// not nil, learns the copy's length before the first byte is written (for a Content-Length
// header). It returns the number of bytes written to w.
func (s *Store) Backup(w io.Writer, size func(int64)) (int64, error) {
	f, err := os.CreateTemp(filepath.Dir(s.db.Path()), ".backup-*.tmp")
	if err != nil {
		return 0, fmt.Errorf("backup: temporary file: %w", err)
	}
	name := f.Name()
	unlinked := runtime.GOOS != "windows" && os.Remove(name) == nil
	defer func() {
		f.Close()
		if !unlinked {
			os.Remove(name)
		}
	}()
	var copied int64
	err = s.db.View(func(tx *bolt.Tx) error {
		var err error
		copied, err = tx.WriteTo(f)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("backup: copy the database: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	if size != nil {
		size(copied)
	}
	n, err := io.Copy(w, io.LimitReader(f, copied))
	if err == nil && n != copied {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return n, fmt.Errorf("backup: %w", err)
	}
	return n, nil
}

// Counts is a snapshot of the database for metrics, read in one transaction.
type Counts struct {
	// Jobs counts the stored jobs by status (expired ones the sweeper has not deleted yet included).
	Jobs map[string]int
	// QueueDepth is how many jobs wait for a worker.
	QueueDepth int
	// OldestQueued is when the job at the head of the queue was first started; zero when the
	// queue is empty.
	OldestQueued time.Time
	// Accounts is the number of accounts.
	Accounts int
	// ReservedCents is the sum of every account's reservations.
	ReservedCents int64
	// SpentCentsMonth is every account's spend in the current calendar month (UTC).
	SpentCentsMonth int64
	// SpentCentsAllTime is every account's spend over all months on record.
	SpentCentsAllTime int64
	// DBBytes is the size of the database as of the transaction.
	DBBytes int64
}

// Counts reads job counts by status, the queue's depth and head, and ledger totals in one read
// transaction. It scans the job records without decoding them: the status is cut out of each
// record, which keeps a scrape of 100,000 jobs in the tens of milliseconds.
func (s *Store) Counts() (Counts, error) {
	c := Counts{Jobs: map[string]int{}}
	month := monthOf(s.opts.Now())
	err := s.db.View(func(tx *bolt.Tx) error {
		c.DBBytes = tx.Size()
		err := tx.Bucket(bucketJobs).ForEach(func(k, v []byte) error {
			status, ok := statusOf(v)
			if !ok {
				var job Job
				if err := readJob(v, &job); err != nil {
					return fmt.Errorf("job %s: %w", k, err)
				}
				status = job.Status
			}
			c.Jobs[status]++
			return nil
		})
		if err != nil {
			return err
		}
		cur := tx.Bucket(bucketQueue).Cursor()
		for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
			if c.QueueDepth == 0 && len(k) >= 8 {
				c.OldestQueued = time.Unix(0, int64(bytesToU64(k[:8]))).UTC()
			}
			c.QueueDepth++
		}
		return tx.Bucket(bucketAccounts).ForEach(func(k, _ []byte) error {
			acct, err := findAccount(tx, string(k))
			if err != nil {
				return err
			}
			c.Accounts++
			c.ReservedCents += acct.ReservedCents
			for m, cents := range acct.MonthlySpend {
				c.SpentCentsAllTime += cents
				if m == month {
					c.SpentCentsMonth += cents
				}
			}
			return nil
		})
	})
	if err != nil {
		return Counts{}, fmt.Errorf("count jobs: %w", err)
	}
	return c, nil
}

// statusPrefix precedes the status in a job record: encoding/json writes the fields in the
// struct's order, and id and account_id (before it) never contain a quote.
var statusPrefix = []byte(`,"status":"`)

// statusOf cuts the status out of a job record without decoding the rest of it.
func statusOf(record []byte) (string, bool) {
	if !isJSONRecord(record) {
		f, ok, err := jobRecordField(record, jobFieldStatus)
		if err != nil || !ok || f.typ != protowire.BytesType {
			return "", false
		}
		return knownStatus(f.bytes)
	}
	i := bytes.Index(record, statusPrefix)
	if i < 0 {
		return "", false
	}
	rest := record[i+len(statusPrefix):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return "", false
	}
	return knownStatus(rest[:j])
}

// knownStatus returns the status named by b, without allocating.
func knownStatus(b []byte) (string, bool) {
	for _, status := range allStatuses {
		if string(b) == status {
			return status, true
		}
	}
	return "", false
}

// allStatuses are the job statuses, in the order a job goes through them.
var allStatuses = []string{StatusCreated, StatusUploaded, StatusQueued, StatusRunning, StatusSucceeded, StatusFailed, StatusCancelled}

// DBStats returns bbolt's counters: transactions, page allocation and the freelist.
func (s *Store) DBStats() bolt.Stats { return s.db.Stats() }
