package httpapi

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/webhook"
)

// EventStore is what the event streams need from the job database: each account's event log
// (store.Event, recorded in the transaction of each job state change) and a wake-up when it
// grows. Both stores implement it; pgstore wakes every node's streams by NOTIFY.
type EventStore interface {
	// EventsAfter returns up to limit of the account's events after seq, oldest first; jobID,
	// when set, keeps only that job's.
	EventsAfter(accountID string, after int64, jobID string, limit int) ([]store.Event, error)
	// EventSeq finds a retained event by id; false when the log does not hold it.
	EventSeq(accountID, eventID string) (int64, bool, error)
	// LastEventSeq is the seq of the account's newest event, 0 when none.
	LastEventSeq(accountID string) (int64, error)
	// WaitEvents returns a channel closed at the account's next event, and its release.
	WaitEvents(accountID string) (<-chan struct{}, func())
}

// ProgressSource reports the progress of running jobs (0 to 1), wherever in the cluster they
// run, and wakes the streams of an account when one of its jobs' progress changes.
type ProgressSource interface {
	// Progress is the last reported progress of the job's attempt; false when none is known.
	Progress(jobID string, attempt int) (float64, bool)
	// WaitProgress returns a channel closed at the account's next progress change, and its
	// release.
	WaitProgress(accountID string) (<-chan struct{}, func())
	// AccountProgress calls fn for every job of the account with a known progress.
	AccountProgress(accountID string, fn func(jobID string, attempt int, progress float64))
	// Forget drops the job's progress: a stream sent its final event, so it has no more.
	Forget(jobID string)
}

// Defaults of the event streams.
const (
	// DefaultMaxStreamsPerKey is how many event streams one API key holds open at once; one
	// more is answered 429 rate_limited (with Retry-After), and other keys are unaffected.
	DefaultMaxStreamsPerKey = 100
	// DefaultStreamHeartbeat is how often an idle stream sends a comment line, so proxies
	// that close quiet connections keep it open.
	DefaultStreamHeartbeat = 15 * time.Second
	// DefaultStreamWriteTimeout is how long one write to a stream may block (a client that
	// stopped reading): past it the stream is dropped.
	DefaultStreamWriteTimeout = 30 * time.Second
	// eventBatch is how many events a stream reads from the log at once: its buffer.
	eventBatch = 64
	// streamRetryAfter is the Retry-After, in seconds, of a stream over the key's bound.
	streamRetryAfter = 5
)

// streamCloser ends every open stream when the server drains.
type streamCloser struct {
	once sync.Once
	ch   chan struct{}
}

// CloseStreams ends every open event stream (a client reconnects elsewhere with its
// Last-Event-ID); the service calls it when it starts draining.
func (s *Server) CloseStreams() { s.closing.once.Do(func() { close(s.closing.ch) }) }

// Streams is how many event streams are open now.
func (s *Server) Streams() int { return s.streams.held() }

func (s *Server) routeEvents(handle func(method, path string, h httprouter.Handle)) {
	handle("GET", "/v1/events", s.withKey(false, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params, key store.APIKey) {
		s.serveEvents(w, r, key, "")
	}))
	handle("GET", "/v1/jobs/:id/events", s.withKey(false, func(w http.ResponseWriter, r *http.Request, ps httprouter.Params, key store.APIKey) {
		s.serveEvents(w, r, key, ps.ByName("id"))
	}))
}

// eventStream is one open stream: its writer, where it is in the log, what it sent.
type eventStream struct {
	s       *Server
	w       http.ResponseWriter
	rc      *http.ResponseController
	buf     []byte
	jobID   string
	cursor  int64
	sent    map[string]bool   // the job stream's event ids sent (to not repeat the final one)
	percent map[string]string // progress last sent per running job: its attempt, a space, the value as written
	wrote   bool              // something was written since the heartbeat was last reset
}

// serveEvents is GET /v1/events (jobID empty) and GET /v1/jobs/{id}/events.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, key store.APIKey, jobID string) {
	if _, err := strictQuery(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(r.URL.Query()) > 0 {
		s.writeError(w, r, errorf(CodeInvalidRequest, "event streams take no query parameters; resume with the Last-Event-ID header"))
		return
	}
	acct := key.AccountID
	if jobID != "" {
		if _, err := s.cfg.Store.Job(acct, jobID); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	lastID := r.Header.Get("Last-Event-ID")
	if lastID != "" && (!store.ValidEventID(lastID) || jobID != "" && !strings.HasPrefix(lastID, "evt_"+jobID+"_")) {
		what := "an event id (evt_...) this stream sent"
		if jobID != "" {
			what = "the id of one of this job's events (evt_" + jobID + "_...)"
		}
		s.writeError(w, r, errorf(CodeInvalidRequest, "Last-Event-ID must be "+what))
		return
	}
	if !s.streams.acquire(key.ID) {
		w.Header().Set("Retry-After", strconv.Itoa(streamRetryAfter))
		s.writeError(w, r, errorf(CodeRateLimited, fmt.Sprintf("this key holds %d event streams, the most it may; close one, or follow several jobs on GET /v1/events", s.cfg.MaxStreamsPerKey)))
		return
	}
	defer s.streams.release(key.ID)

	// Subscribe before reading, so an event between the read and the wait is not missed.
	changed, release := s.cfg.Store.WaitEvents(acct)
	defer func() { release() }()
	var progressed <-chan struct{}
	releaseProgress := func() {}
	if s.cfg.Progress != nil {
		progressed, releaseProgress = s.cfg.Progress.WaitProgress(acct)
	}
	defer func() { releaseProgress() }()

	st := &eventStream{s: s, w: w, rc: http.NewResponseController(w), jobID: jobID,
		sent: map[string]bool{}, percent: map[string]string{}}
	reset := false
	switch {
	case lastID != "":
		seq, found, err := s.cfg.Store.EventSeq(acct, lastID)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		// Not retained (older than the log keeps, or never sent): a job stream replays the
		// job's retained events; the account stream says so (reset) and replays the log.
		st.cursor, reset = seq, !found && jobID == ""
		st.sent[lastID] = true
	case jobID == "":
		seq, err := s.cfg.Store.LastEventSeq(acct)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		st.cursor = seq
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	h["X-Content-Type-Options"] = noSniff
	st.rc.SetReadDeadline(time.Time{}) // the server's ReadTimeout must not end a stream
	w.WriteHeader(http.StatusOK)
	st.buf = append(st.buf, "retry: 2000\n\n"...)
	if reset {
		st.buf = append(st.buf, "event: reset\ndata: "...)
		msg, _ := json.Marshal(map[string]string{"message": "Last-Event-ID " + lastID +
			" is older than the events this account keeps (the last " + strconv.Itoa(store.EventLogSize) +
			"): every retained event follows; re-read jobs with GET /v1/jobs for what came before"})
		st.buf = append(append(st.buf, msg...), "\n\n"...)
	}
	if st.flush() != nil {
		return
	}

	heartbeat := time.NewTicker(s.cfg.StreamHeartbeat)
	defer heartbeat.Stop()
	for {
		done, err := st.catchUp(acct)
		if err != nil {
			s.log.WarnContext(r.Context(), "event stream ended", "request_id", requestID(r), "error", err)
			return
		}
		if done {
			return
		}
		if st.wrote { // a heartbeat only after a quiet interval
			st.wrote = false
			heartbeat.Reset(s.cfg.StreamHeartbeat)
		}
		select {
		case <-changed:
			release()
			changed, release = s.cfg.Store.WaitEvents(acct)
		case <-progressed:
			releaseProgress()
			progressed, releaseProgress = s.cfg.Progress.WaitProgress(acct)
			if err := st.progress(acct); err != nil {
				return
			}
			if st.wrote {
				st.wrote = false
				heartbeat.Reset(s.cfg.StreamHeartbeat)
			}
		case <-heartbeat.C:
			st.buf = append(st.buf, ": heartbeat\n\n"...)
			if st.flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.closing.ch:
			return
		}
	}
}

// catchUp sends every logged event after the cursor; done is true when a job stream has sent
// its job's final event.
func (st *eventStream) catchUp(acct string) (done bool, err error) {
	if err := st.sendLogged(acct); err != nil {
		return false, err
	}
	if st.jobID == "" {
		return false, nil
	}
	if hook := st.s.afterLogRead.Load(); hook != nil {
		(*hook)(st.jobID)
	}
	job, err := st.s.cfg.Store.Job(acct, st.jobID)
	if err != nil {
		return true, nil // expired meanwhile: nothing more will happen to it
	}
	if !job.Finished() {
		return false, nil
	}
	// The job finished after the log was read above: the events logged since (its running
	// and final ones, committed with the changes, so before the job reads as finished) come
	// first.
	if err := st.sendLogged(acct); err != nil {
		return false, err
	}
	// Its final event, from the job itself when the log no longer holds it.
	if id := store.JobEventID(job); !st.sent[id] {
		at := st.s.now()
		if job.FinishedAt != nil {
			at = *job.FinishedAt
		}
		if err := st.event(id, store.WebhookEventType(job.Status), at, job, ""); err != nil {
			return false, err
		}
	}
	return true, st.flush()
}

// sendLogged sends every logged event after the cursor (of the stream's job, for a job stream).
func (st *eventStream) sendLogged(acct string) error {
	for {
		evs, err := st.s.cfg.Store.EventsAfter(acct, st.cursor, st.jobID, eventBatch)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			st.cursor = ev.Seq
			var job store.Job
			if err := json.Unmarshal(ev.Job, &job); err != nil {
				return fmt.Errorf("event %s: %w", ev.ID, err)
			}
			if err := st.event(ev.ID, ev.Type, ev.CreatedAt, job, ""); err != nil {
				return err
			}
		}
		if err := st.flush(); err != nil {
			return err
		}
		if len(evs) < eventBatch {
			return nil
		}
	}
}

// progress sends job.progress events for the stream's running jobs whose progress changed.
func (st *eventStream) progress(acct string) error {
	now := st.s.now()
	type report struct {
		id      string
		attempt int
		value   float64
	}
	var reports []report
	st.s.cfg.Progress.AccountProgress(acct, func(jobID string, attempt int, p float64) {
		if st.jobID == "" || jobID == st.jobID {
			reports = append(reports, report{jobID, attempt, p})
		}
	})
	for _, r := range reports {
		id, text := r.id, progressText(r.value)
		// What was sent is kept with its attempt: a retried job's progress starts again, and
		// its first value is sent even when the last attempt's ended on the same one.
		sent := strconv.Itoa(r.attempt) + " " + text
		if st.percent[id] == sent {
			continue
		}
		if hook := st.s.afterProgressValue.Load(); hook != nil {
			(*hook)(id, text)
		}
		job, err := st.s.progressReads.job(st.s.cfg.Store, acct, id, sent)
		if err != nil || job.Status != store.StatusRunning || job.Attempt != r.attempt {
			continue // finished, or the value is another attempt's
		}
		st.percent[id] = sent
		if err := st.event("", EventJobProgress, now, job, text); err != nil {
			return err
		}
	}
	return st.flush()
}

// progressReads shares among a node's streams the read of a job behind each of its progress
// changes: the first stream to send a progress value reads the job, and every other stream
// of the account sending that value uses the same read (or waits for it), so a change costs
// one read per node, not one per stream. A stream that sends a job's final event drops the
// job's read (and the job from the progress source, so no stream reads it again), so no
// stream sends a progress event after it from a read older than it, and a finished job
// leaves no read behind on a node whose streams follow it to its end.
type progressReads struct {
	mu    sync.Mutex
	reads map[string]*progressRead // by account and job id: the read of its latest value
	n     atomic.Int64             // reads made, for tests
}

// progressRead is one read of a job, for the progress value text.
type progressRead struct {
	text string
	done chan struct{} // closed when job and err are set
	job  store.Job
	err  error
}

// maxProgressReads bounds the reads kept: past it they are all dropped, and the next change
// of each running job reads it again. Dropping a read at its job's final event does not bound
// them alone, since that is done by this node's open streams only: a read stays when every
// stream that followed the job here closed before it finished, when an account stream fell
// further behind than the log keeps, or when a report of the job reached the source after a
// stream here sent its final event and dropped it (on PostgreSQL a report published just
// before the finish can arrive after the final event's notification: another connection).
const maxProgressReads = 4096

// job returns the account's job as read for its progress value text (with its attempt): read
// now by the first stream that asks for text, shared with the others.
func (p *progressReads) job(st Store, acct, id, text string) (store.Job, error) {
	key := acct + "/" + id
	p.mu.Lock()
	r := p.reads[key]
	if r != nil && r.text == text {
		p.mu.Unlock()
		<-r.done
		return r.job, r.err
	}
	if p.reads == nil || len(p.reads) >= maxProgressReads {
		p.reads = map[string]*progressRead{}
	}
	r = &progressRead{text: text, done: make(chan struct{})}
	p.reads[key] = r
	p.mu.Unlock()
	p.n.Add(1)
	r.job, r.err = st.Job(acct, id)
	close(r.done)
	return r.job, r.err
}

// forget drops the job's read (its final event was sent).
func (p *progressReads) forget(acct, id string) {
	p.mu.Lock()
	delete(p.reads, acct+"/"+id)
	p.mu.Unlock()
}

// EventJobProgress is the type of the streams' progress events; they carry no id (a resume
// starts from the last state change, and the next progress event follows).
const EventJobProgress = "job.progress"

// event appends one event in the webhook body's shape; id empty writes none. A progress
// event passes the value text it was sent for, so its body shows that value, not a later
// report (which the next progress event would then repeat); other events pass "".
func (st *eventStream) event(id, typ string, at time.Time, job store.Job, progress string) error {
	v := st.s.viewJob(job)
	if progress != "" && job.Status == store.StatusRunning {
		v.Progress = json.RawMessage(progress)
	}
	view, err := v.encodeJSON()
	if err != nil {
		return err
	}
	data, err := webhook.JobData(json.RawMessage(view))
	if err != nil {
		return err
	}
	bodyID := id
	if bodyID == "" {
		bodyID = "evt_" + job.ID + "_progress"
	}
	body, err := webhook.Event{ID: bodyID, Type: typ, CreatedAt: at, Data: data}.Marshal()
	if err != nil {
		return err
	}
	if id != "" {
		st.buf = append(append(append(st.buf, "id: "...), id...), '\n')
		if st.jobID != "" {
			st.sent[id] = true // a job stream's few ids; an account stream keeps none
		}
	}
	if job.Finished() {
		// No more progress of it: the stream's map holds running jobs only, and the node's
		// source and shared reads drop it, so no stream reads it again for a progress value
		// its source still held (the source keeps a job's last value for store.ProgressTTL).
		delete(st.percent, job.ID)
		if st.s.cfg.Progress != nil {
			st.s.cfg.Progress.Forget(job.ID)
		}
		st.s.progressReads.forget(job.AccountID, job.ID)
	}
	st.buf = append(append(append(st.buf, "event: "...), typ...), '\n')
	st.buf = append(append(append(st.buf, "data: "...), body...), "\n\n"...)
	if len(st.buf) > 64<<10 {
		return st.flush()
	}
	return nil
}

// flush writes what is buffered under the write deadline and pushes it to the client; a
// client that does not read within the deadline gets its stream dropped.
func (st *eventStream) flush() error {
	if len(st.buf) == 0 {
		return nil
	}
	st.rc.SetWriteDeadline(time.Now().Add(st.s.cfg.StreamWriteTimeout))
	_, err := st.w.Write(st.buf)
	st.buf = st.buf[:0]
	st.wrote = true
	if err == nil {
		err = st.rc.Flush()
	}
	if err != nil {
		return fmt.Errorf("write to the stream: %w", err)
	}
	return nil
}

// progressJSON is a running job's progress field: its attempt's last report with two
// decimals, or null.
func (s *Server) progressJSON(j store.Job) json.RawMessage {
	if s.cfg.Progress != nil {
		if p, ok := s.cfg.Progress.Progress(j.ID, j.Attempt); ok {
			return json.RawMessage(progressText(p))
		}
	}
	return json.RawMessage("null")
}

// progressText is a progress value as the API shows it: two decimals at most.
func progressText(p float64) string {
	return strconv.FormatFloat(math.Round(p*100)/100, 'f', -1, 64)
}
