package service

import (
	"encoding/json"
	"fmt"

	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/webhook"
)

// batchEventBody is the signed body of a batch.finished delivery: the event with the batch
// as GET /v1/batches/{id} shows it.
func (d *dispatcher) batchEventBody(del store.WebhookDelivery) ([]byte, error) {
	var snap store.BatchSnapshot
	if err := json.Unmarshal(del.Job, &snap); err != nil {
		return nil, fmt.Errorf("decode the batch of %s: %w", del.ID, err)
	}
	if d.renderBatch == nil {
		return nil, fmt.Errorf("no renderer for %s", del.EventType)
	}
	data, err := d.renderBatch(snap)
	if err != nil {
		return nil, fmt.Errorf("render the batch of %s: %w", del.ID, err)
	}
	return webhook.Event{ID: del.EventID, Type: del.EventType, CreatedAt: del.CreatedAt, Data: data}.Marshal()
}

// CreateBatch creates the batch's jobs, then wakes the sweeper if they expire before its
// next pass, as CreateJob does.
func (a apiStore) CreateBatch(p store.CreateBatchParams, render func(store.Batch, []store.Job) (store.Response, error)) (store.Batch, []store.Job, store.Response, error) {
	b, jobs, resp, err := a.JobStore.CreateBatch(p, render)
	if err == nil && a.created != nil && !b.ExpiresAt.IsZero() {
		a.created(b.ExpiresAt)
	}
	return b, jobs, resp, err
}
