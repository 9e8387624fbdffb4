package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Event types of the event streams (docs/events.md). The final three are also webhook
// events, with the same ids.
const (
	EventJobQueued    = "job.queued"
	EventJobRunning   = "job.running"
	EventJobProgress  = "job.progress"
	EventJobSucceeded = "job.succeeded"
	EventJobFailed    = "job.failed"
	EventJobCancelled = "job.cancelled"
	// EventReset: the stream resumed from a Last-Event-ID the server no longer holds; the
	// retained events follow, and what came before them is lost (re-read the jobs).
	EventReset = "reset"
)

// Event is one event of GET /v1/events or GET /v1/jobs/{id}/events.
type Event struct {
	// ID resumes the stream after this event (EventsOptions.LastEventID); empty on
	// job.progress, which is not replayed.
	ID        string
	Type      string
	CreatedAt time.Time
	// Job is the job as the event left it (every type but reset).
	Job *Job
	// Message explains a reset.
	Message string
}

// EventsOptions tune an event stream.
type EventsOptions struct {
	// LastEventID resumes after this event (an Event.ID received before).
	LastEventID string
	// Reconnects is how often the stream is opened again, after the last event's id, when the
	// connection drops (0 means 5; negative means never); a new event resets the count.
	Reconnects int
}

// JobEvents follows one job's events until its final one (succeeded, failed or cancelled),
// then the sequence ends. A job stream starts with the job's retained events (or those after
// o.LastEventID).
func (c *Client) JobEvents(ctx context.Context, jobID string, o EventsOptions) iter.Seq2[Event, error] {
	return c.events(ctx, "/v1/jobs/"+jobID+"/events", o)
}

// Events follows the account's events from now on (or after o.LastEventID) until ctx ends or
// the stream cannot be opened again.
func (c *Client) Events(ctx context.Context, o EventsOptions) iter.Seq2[Event, error] {
	return c.events(ctx, "/v1/events", o)
}

// errStreamEnded is a stream that ended at the server's end (a job stream after its final
// event, or a drain): a job stream is over, an account stream reconnects.
var errStreamEnded = errors.New("stream ended")

func (c *Client) events(ctx context.Context, path string, o EventsOptions) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		last := o.LastEventID
		reconnects := o.Reconnects
		if reconnects == 0 {
			reconnects = 5
		}
		finalSeen := false
		for tries := 0; ; tries++ {
			got := false
			err := c.openEvents(ctx, path, last, func(ev Event) bool {
				got = true
				if ev.ID != "" {
					last = ev.ID
				}
				switch ev.Type {
				case EventJobSucceeded, EventJobFailed, EventJobCancelled:
					finalSeen = strings.HasPrefix(path, "/v1/jobs/")
				}
				return yield(ev, nil)
			})
			if errors.Is(err, errStopped) || ctx.Err() != nil {
				return
			}
			if got {
				tries = 0
			}
			var apiErr *APIError
			final := errors.As(err, &apiErr) && !retryable(apiErr)
			if final || finalSeen || tries >= reconnects {
				if err != nil && !errors.Is(err, errStreamEnded) {
					yield(Event{}, err)
				}
				return
			}
			wait := c.backoff(tries)
			if apiErr != nil && apiErr.RetryAfter > 0 {
				wait = apiErr.RetryAfter
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

var errStopped = errors.New("caller stopped")

// openEvents opens one connection and hands each event to fn until the stream ends.
func (c *Client) openEvents(ctx context.Context, path, lastID string, fn func(Event) bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.BaseURL, "/")+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := c.streamClient().Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return decodeResponse(resp, nil)
	}
	defer resp.Body.Close()
	err = ReadEvents(resp.Body, func(ev Event) error {
		if !fn(ev) {
			return errStopped
		}
		return nil
	})
	if err == nil {
		return errStreamEnded
	}
	return err
}

// streamClient is the HTTP client without its overall Timeout, which would cut a stream.
func (c *Client) streamClient() *http.Client {
	hc := *c.httpClient()
	hc.Timeout = 0
	return &hc
}

// maxEventBytes bounds one event's data, so a broken server cannot grow the reader's memory.
const maxEventBytes = 4 << 20

// ReadEvents parses a Server-Sent Events body, calling fn for each event (comments such as
// the heartbeats are skipped), until r ends (nil) or fn or the reader fails.
func ReadEvents(r io.Reader, fn func(Event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventBytes)
	var id, typ string
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if data.Len() > 0 || typ != "" {
				ev, err := decodeEvent(id, typ, data.String())
				if err != nil {
					return err
				}
				if err := fn(ev); err != nil {
					return err
				}
			}
			id, typ = "", ""
			data.Reset()
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			id = value
		case "event":
			typ = value
		case "data":
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(value)
		}
	}
	return sc.Err()
}

// decodeEvent reads an event's data: the webhook body shape, or a reset's message.
func decodeEvent(id, typ, data string) (Event, error) {
	ev := Event{ID: id, Type: typ}
	if typ == EventReset {
		var m struct {
			Message string `json:"message"`
		}
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			return Event{}, fmt.Errorf("event %s: %w", typ, err)
		}
		ev.Message = m.Message
		return ev, nil
	}
	var body struct {
		CreatedAt time.Time `json:"created_at"`
		Data      struct {
			Job *Job `json:"job"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(data), &body); err != nil {
		return Event{}, fmt.Errorf("event %s %s: %w", typ, id, err)
	}
	ev.CreatedAt, ev.Job = body.CreatedAt, body.Data.Job
	return ev, nil
}

// followJob calls onChange for each change of the job's status or progress on its event
// stream until its final event; ok is false when the stream could not be followed to the end
// (the caller then polls).
func (c *Client) followJob(ctx context.Context, id string, onChange func(Job)) (job Job, ok bool) {
	var lastStatus Status
	var lastProgress *float64
	for ev, err := range c.JobEvents(ctx, url.PathEscape(id), EventsOptions{}) {
		if err != nil || ev.Job == nil {
			if err != nil {
				return job, false
			}
			continue
		}
		job = *ev.Job
		changed := job.Status != lastStatus ||
			(job.Progress != nil && (lastProgress == nil || *job.Progress != *lastProgress))
		lastStatus, lastProgress = job.Status, job.Progress
		if changed {
			onChange(job)
		}
		if job.Finished() {
			return job, true
		}
	}
	return job, false
}
