package webhook

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Event types a job emits when it finishes.
const (
	EventJobSucceeded = "job.succeeded"
	EventJobFailed    = "job.failed"
	EventJobCancelled = "job.cancelled"
	// EventBatchFinished: every job of a batch reached a final state; its data is
	// {"batch": <the batch as GET /v1/batches/{id} returns it>}.
	EventBatchFinished = "batch.finished"
)

// EventIDPrefix starts every id NewEventID returns.
const EventIDPrefix = "evt_"

// Event is the body of a delivery: {"id","type","created_at","data":{"job":...}}.
type Event struct {
	// ID is unique per event and the same on every attempt to deliver it.
	ID string `json:"id"`
	// Type is one of the Event* constants.
	Type string `json:"type"`
	// CreatedAt is when the state change happened (marshalled in UTC).
	CreatedAt time.Time `json:"created_at"`
	// Data is the event's payload, {"job": <the Job as GET /v1/jobs/{id} returns it>}.
	Data json.RawMessage `json:"data"`
}

// Marshal returns the event's JSON body, the bytes to sign and send. Data must be a JSON
// object.
func (e Event) Marshal() ([]byte, error) {
	if e.ID == "" || e.Type == "" {
		return nil, errors.New("webhook: event needs an id and a type")
	}
	if !json.Valid(e.Data) || len(e.Data) == 0 || e.Data[0] != '{' {
		return nil, fmt.Errorf("webhook: event %s: data must be a JSON object", e.ID)
	}
	e.CreatedAt = e.CreatedAt.UTC()
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("webhook: marshal event %s: %w", e.ID, err)
	}
	return b, nil
}

// JobData returns the Data of a job event, {"job": job}, with job marshalled as JSON.
func JobData(job any) (json.RawMessage, error) {
	b, err := json.Marshal(struct {
		Job any `json:"job"`
	}{job})
	if err != nil {
		return nil, fmt.Errorf("webhook: marshal job: %w", err)
	}
	return b, nil
}

// NewEventID returns a new random event id, "evt_" and 16 random bytes in hex.
func NewEventID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("webhook: new event id: %w", err)
	}
	return EventIDPrefix + hex.EncodeToString(b[:]), nil
}
