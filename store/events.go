package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// EventLogSize is how many events each account's event log keeps: the oldest is dropped in
// the transaction that appends one more. A stream resumes (Last-Event-ID) from any of them.
const EventLogSize = 1000

// Event is one job state change in an account's event log, recorded in the transaction of
// the change: what GET /v1/events and GET /v1/jobs/{id}/events send.
type Event struct {
	// Seq orders an account's events: each one's is greater than the one before.
	Seq int64 `json:"-"`
	// ID is JobEventID: for a final state the id of the webhook event it also is.
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	AccountID string    `json:"account_id"`
	JobID     string    `json:"job_id"`
	CreatedAt time.Time `json:"created_at"`
	// Job is the job as stored right after the change (Job's JSON), as webhooks carry it.
	Job json.RawMessage `json:"job"`
}

// JobEventID is the id of the event of a job reaching its current status: a final state's is
// WebhookEventID (evt_<job id>_<status>), the webhook's; queued at start is evt_<job id>_queued;
// running, and queued again after an attempt, carry the attempt (evt_<job id>_running_1).
func JobEventID(job Job) string {
	id := WebhookEventID(job.ID, job.Status)
	if !job.Finished() && job.Attempt > 0 {
		id += "_" + strconv.Itoa(job.Attempt)
	}
	return id
}

// ValidEventID reports whether id has the shape of an event id (evt_ and at most 120
// letters, digits and underscores), so a malformed Last-Event-ID is refused before any lookup.
func ValidEventID(id string) bool {
	rest, ok := strings.CutPrefix(id, "evt_")
	if !ok || rest == "" || len(rest) > 120 {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// NewJobEvent is the event of job reaching its current status at now.
func NewJobEvent(job Job, now time.Time) (Event, error) {
	snapshot, err := json.Marshal(job)
	if err != nil {
		return Event{}, fmt.Errorf("encode job %s for its event: %w", job.ID, err)
	}
	return Event{ID: JobEventID(job), Type: WebhookEventType(job.Status), AccountID: job.AccountID,
		JobID: job.ID, CreatedAt: now.UTC(), Job: snapshot}, nil
}

// bucketEvents holds one bucket per account: seq(8) -> event id, a newline, the event's JSON.
var bucketEvents = []byte("events")

// recordJobEvent appends the event of job reaching its current status to its account's log,
// dropping the oldest beyond EventLogSize, in the change's transaction; streams wake at commit.
func (s *Store) recordJobEvent(tx *bolt.Tx, job Job, now time.Time) error {
	ev, err := NewJobEvent(job, now)
	if err != nil {
		return err
	}
	root, err := tx.CreateBucketIfNotExists(bucketEvents)
	if err != nil {
		return err
	}
	b, err := root.CreateBucketIfNotExists([]byte(job.AccountID))
	if err != nil {
		return err
	}
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event %s: %w", ev.ID, err)
	}
	val := append(append([]byte(ev.ID), '\n'), body...)
	if err := b.Put(seqKey(seq), val); err != nil {
		return err
	}
	if seq > EventLogSize {
		c := b.Cursor()
		for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) <= seq-EventLogSize; k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
	}
	acct := job.AccountID
	tx.OnCommit(func() { s.events.Signal(acct) })
	return nil
}

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// decodeEvent reads a stored event (its id, a newline, its JSON).
func decodeEvent(k, v []byte) (Event, error) {
	_, body, ok := bytes.Cut(v, []byte{'\n'})
	if !ok {
		return Event{}, fmt.Errorf("event %x: no id line", k)
	}
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return Event{}, fmt.Errorf("event %x: %w", k, err)
	}
	ev.Seq = int64(binary.BigEndian.Uint64(k))
	return ev, nil
}

// EventsAfter returns up to limit of the account's events after seq, oldest first; jobID,
// when set, keeps only that job's.
func (s *Store) EventsAfter(accountID string, after int64, jobID string, limit int) ([]Event, error) {
	var out []Event
	err := s.db.View(func(tx *bolt.Tx) error {
		b := accountEvents(tx, accountID)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(seqKey(uint64(after) + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			if jobID != "" {
				id, _, _ := bytes.Cut(v, []byte{'\n'})
				if !bytes.HasPrefix(id, []byte("evt_"+jobID+"_")) {
					continue
				}
			}
			ev, err := decodeEvent(k, v)
			if err != nil {
				return err
			}
			out = append(out, ev)
		}
		return nil
	})
	return out, err
}

// EventSeq finds an event of the account's log by id: its Seq, and false when the log does
// not hold it (never recorded, another account's, or older than the last EventLogSize).
func (s *Store) EventSeq(accountID, eventID string) (int64, bool, error) {
	var seq int64
	var found bool
	err := s.db.View(func(tx *bolt.Tx) error {
		b := accountEvents(tx, accountID)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		want := []byte(eventID + "\n")
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			if bytes.HasPrefix(v, want) {
				seq, found = int64(binary.BigEndian.Uint64(k)), true
				return nil
			}
		}
		return nil
	})
	return seq, found, err
}

// LastEventSeq is the Seq of the account's newest event (0 when it has none): a stream that
// does not resume starts after it.
func (s *Store) LastEventSeq(accountID string) (int64, error) {
	var seq int64
	err := s.db.View(func(tx *bolt.Tx) error {
		if b := accountEvents(tx, accountID); b != nil {
			if k, _ := b.Cursor().Last(); k != nil {
				seq = int64(binary.BigEndian.Uint64(k))
			}
		}
		return nil
	})
	return seq, err
}

// WaitEvents returns a channel closed when the account's log next gets an event, and a
// function that releases it.
func (s *Store) WaitEvents(accountID string) (<-chan struct{}, func()) {
	return s.events.WaitChange(accountID)
}

func accountEvents(tx *bolt.Tx, accountID string) *bolt.Bucket {
	root := tx.Bucket(bucketEvents)
	if root == nil {
		return nil
	}
	return root.Bucket([]byte(accountID))
}
