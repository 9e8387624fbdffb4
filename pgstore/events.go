package pgstore

import (
	"encoding/json"
	"regexp"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/store"
)

// eventCols are the job columns of an event's snapshot (c.j, a convsvc_event_job), then the
// event's own. Every column name in jobCols gets the (c.j). prefix, also inside its
// coalesce(...) calls.
var eventCols = regexp.MustCompile(`\b([a-z][a-z0-9_]*)\b(\s*[^\s(a-z0-9_]|\s*$)`).
	ReplaceAllString(jobCols, "(c.j).$1$2") + ", e.seq, e.id, e.type, e.account_id, e.job_id, e.created_at"

// eventJob is SQL for an event_log row's job (e): the row the trigger wrote since migration
// 0032, or the JSON snapshot an earlier trigger wrote, read into the same type.
const eventJob = `CROSS JOIN LATERAL (SELECT coalesce(e.job, jsonb_populate_record(NULL::convsvc_event_job, e.snap)) AS j) c`

// logStart is SQL for the seq after which the log of the account in query argument arg holds
// its events: the account's last store.EventLogSize seqs. The event trigger prunes what is
// older every 100th event (migration 0025), so the table holds up to 99 more rows; the readers
// bound themselves by this, so the log is exactly the last store.EventLogSize events.
func logStart(arg string) string {
	return `coalesce((SELECT s.seq FROM event_seqs s WHERE s.account_id = ` + arg + `), 0) - ` + strconv.Itoa(store.EventLogSize)
}

// EventsAfter returns up to limit of the account's events after seq, oldest first; jobID,
// when set, keeps only that job's. Each carries the job as its change left it (the trigger's
// snapshot).
func (s *Store) EventsAfter(accountID string, after int64, jobID string, limit int) ([]store.Event, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT `+eventCols+` FROM event_log e `+eventJob+`
		WHERE e.account_id = $1 AND e.seq > greatest($2, `+logStart("$1")+`) AND ($3 = '' OR e.job_id = $3) ORDER BY e.seq LIMIT $4`,
		accountID, after, jobID, limit)
	if err != nil {
		return nil, wrap("events", err)
	}
	evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Event, error) {
		var ev store.Event
		job, err := scanJob(extraRow{row, []any{&ev.Seq, &ev.ID, &ev.Type, &ev.AccountID, &ev.JobID, &ev.CreatedAt}})
		if err != nil {
			return ev, err
		}
		ev.CreatedAt = ev.CreatedAt.UTC()
		ev.Job, err = json.Marshal(job)
		return ev, err
	})
	return evs, wrap("events", err)
}

// EventSeq finds an event of the account's log by id: its seq, and false when the log does
// not hold it (never recorded, another account's, or older than the last store.EventLogSize).
// It reads the account's retained seqs by the primary key (the id has no index since
// migration 0032): at most store.EventLogSize+99 rows, once per resumed stream.
func (s *Store) EventSeq(accountID, eventID string) (int64, bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var seq int64
	err := s.pool.QueryRow(ctx, `SELECT seq FROM event_log WHERE id = $1 AND account_id = $2 AND seq > `+logStart("$2"),
		eventID, accountID).Scan(&seq)
	if isNoRows(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, wrap("event", err)
	}
	return seq, true, nil
}

// LastEventSeq is the seq of the account's newest event (0 when it has none).
func (s *Store) LastEventSeq(accountID string) (int64, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var seq int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce((SELECT seq FROM event_seqs WHERE account_id = $1), 0)`, accountID).Scan(&seq)
	return seq, wrap("last event", err)
}

// WaitEvents returns a channel closed when the account's log next gets an event on any node
// (or when the listener reconnects), and a function that releases it.
func (s *Store) WaitEvents(accountID string) (<-chan struct{}, func()) {
	return s.events.WaitChange(accountID)
}
