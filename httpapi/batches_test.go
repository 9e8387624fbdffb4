package httpapi_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/webhook"
)

type batchReservation struct {
	ID   string                `json:"id"`
	Jobs []testenv.Reservation `json:"jobs"`
}

type batchView struct {
	ID         string         `json:"id"`
	Status     string         `json:"status"`
	Total      int            `json:"total"`
	Counts     map[string]int `json:"counts"`
	JobIDs     []string       `json:"job_ids"`
	FinishedAt *string        `json:"finished_at"`
}

type manifest struct {
	BatchID string `json:"batch_id"`
	Status  string `json:"status"`
	Items   []struct {
		Index     int     `json:"index"`
		JobID     string  `json:"job_id"`
		Status    string  `json:"status"`
		File      *string `json:"file"`
		Bytes     *int64  `json:"bytes"`
		SHA256    *string `json:"sha256"`
		ErrorCode *string `json:"error_code"`
	} `json:"items"`
}

func batchItems(n int, input, target string, size int) []map[string]any {
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"input_format": input, "target_format": target, "input_bytes": size}
	}
	return items
}

func getBatch(t *testing.T, e *testenv.Env, key, id, query string) batchView {
	t.Helper()
	r := e.Do("GET", "/v1/batches/"+id+query, key, nil)
	must(t, r, 200, "")
	var v batchView
	r.JSON(t, &v)
	return v
}

// TestAPI_Batch_Lifecycle: one request reserves every job (counting once against the rate
// limit), each job is a job, start starts the uploaded ones and leaves the rest created,
// cancel finishes the batch, and the archive holds the succeeded outputs and a manifest of
// every item, with a length, an ETag and Range once finished.
func TestAPI_Batch_Lifecycle(t *testing.T) {
	e := testenv.Start(t)
	acct, key := e.NewAccount(100)
	png := testenv.Sample(t, "images/sample.png")
	items := batchItems(4, "png", "jpeg", len(png))
	r := e.Do("POST", "/v1/batches", key, map[string]any{"jobs": items})
	must(t, r, 200, "")
	limit, _ := strconv.Atoi(r.Header.Get("RateLimit-Limit"))
	if rem, _ := strconv.Atoi(r.Header.Get("RateLimit-Remaining")); rem != limit-1 {
		t.Fatalf("a batch of 4 left RateLimit-Remaining %d of %d, want %d", rem, limit, limit-1)
	}
	var res batchReservation
	r.JSON(t, &res)
	if !strings.HasPrefix(res.ID, "bat_") || len(res.Jobs) != 4 {
		t.Fatalf("batch %q with %d jobs", res.ID, len(res.Jobs))
	}
	if got := e.Account(acct)["reserved_cents"]; got != float64(4) {
		t.Fatalf("reserved_cents %v after a batch of 4, want 4", got)
	}
	// Items 0 and 1 convert, item 2 is not a PNG, item 3 is never uploaded.
	for i, data := range [][]byte{png, png, bytes.Repeat([]byte("x"), len(png))} {
		must(t, e.Upload(res.Jobs[i].UploadURL, data), 200, "")
	}
	if j := e.Get(key, res.Jobs[0].Job.ID, 0); j.Status != "created" {
		t.Fatalf("job 0 before start: %s", j.Status)
	}
	r = e.Do("POST", "/v1/batches/"+res.ID+"/start", key, nil)
	must(t, r, 200, "")
	var started batchView
	r.JSON(t, &started)
	if started.Total != 4 || started.Counts["created"] != 1 || started.Status != "open" {
		t.Fatalf("after start: %+v", started)
	}
	if rem, _ := strconv.Atoi(r.Header.Get("RateLimit-Remaining")); rem != limit-2 {
		t.Fatalf("start of a batch of 4 left RateLimit-Remaining %d, want %d", rem, limit-2)
	}
	for i := range 3 {
		e.WaitFinished(key, res.Jobs[i].Job.ID)
	}
	// Item 3 keeps the batch open: a wait answers open when it runs out.
	if v := getBatch(t, e, key, res.ID, "?wait=1"); v.Status != "open" || v.FinishedAt != nil ||
		v.Counts["succeeded"] != 2 || v.Counts["failed"] != 1 || v.Counts["created"] != 1 {
		t.Fatalf("batch with one job never uploaded: %+v", v)
	}
	// Each job stays a job: cancelled on its own, it finishes the batch.
	must(t, e.Do("POST", "/v1/jobs/"+res.Jobs[3].Job.ID+"/cancel", key, nil), 200, "")
	v := getBatch(t, e, key, res.ID, "?wait=30")
	if v.Status != "finished" || v.FinishedAt == nil || v.Counts["cancelled"] != 1 || len(v.JobIDs) != 4 || v.JobIDs[2] != res.Jobs[2].Job.ID {
		t.Fatalf("finished batch: %+v", v)
	}
	// Cancelling a finished batch changes nothing.
	r = e.Do("POST", "/v1/batches/"+res.ID+"/cancel", key, nil)
	must(t, r, 200, "")
	acctNow := e.Account(acct)
	if acctNow["reserved_cents"] != float64(0) {
		t.Fatalf("reserved_cents %v after the batch finished", acctNow["reserved_cents"])
	}

	r = e.Do("GET", "/v1/batches/"+res.ID+"/archive", key, nil)
	must(t, r, 200, "")
	etag := r.Header.Get("ETag")
	if etag == "" || r.Header.Get("Accept-Ranges") != "bytes" || r.Header.Get("Content-Type") != "application/zip" ||
		r.Header.Get("Content-Length") != strconv.Itoa(len(r.Body)) {
		t.Fatalf("archive headers %v, %d bytes", r.Header, len(r.Body))
	}
	zr, err := zip.NewReader(bytes.NewReader(r.Body), int64(len(r.Body)))
	if err != nil {
		t.Fatalf("archive is not a zip: %v", err)
	}
	if len(zr.File) != 3 || zr.File[0].Name != "manifest.json" || zr.File[1].Name != "0.jpg" || zr.File[2].Name != "1.jpg" {
		names := []string{}
		for _, f := range zr.File {
			names = append(names, f.Name)
		}
		t.Fatalf("archive entries %v", names)
	}
	var m manifest
	readZipJSON(t, zr.File[0], &m)
	if m.BatchID != res.ID || m.Status != "finished" || len(m.Items) != 4 {
		t.Fatalf("manifest %+v", m)
	}
	wantStatus := []string{"succeeded", "succeeded", "failed", "cancelled"}
	for i, it := range m.Items {
		if it.Index != i || it.JobID != res.Jobs[i].Job.ID || it.Status != wantStatus[i] {
			t.Fatalf("manifest item %d: %+v", i, it)
		}
		if i < 2 {
			job := e.Get(key, it.JobID, 0)
			data := readZipFile(t, zr.File[1+i])
			sum := sha256.Sum256(data)
			if it.File == nil || *it.File != zr.File[1+i].Name || *it.SHA256 != job.Output.SHA256 || hex.EncodeToString(sum[:]) != job.Output.SHA256 || *it.Bytes != int64(len(data)) {
				t.Fatalf("item %d's entry does not match its job's output", i)
			}
		} else if it.File != nil || it.ErrorCode == nil && i == 2 {
			t.Fatalf("item %d: %+v", i, it)
		}
	}
	// Range, If-None-Match and HEAD on the finished archive.
	rr := e.Do("GET", "/v1/batches/"+res.ID+"/archive", key, nil, "Range", "bytes=100-1099")
	must(t, rr, 206, "")
	if !bytes.Equal(rr.Body, r.Body[100:1100]) || rr.Header.Get("Content-Range") != fmt.Sprintf("bytes 100-1099/%d", len(r.Body)) {
		t.Fatalf("range: %d bytes, Content-Range %q", len(rr.Body), rr.Header.Get("Content-Range"))
	}
	tail := e.Do("GET", "/v1/batches/"+res.ID+"/archive", key, nil, "Range", "bytes=-50")
	must(t, tail, 206, "")
	if !bytes.Equal(tail.Body, r.Body[len(r.Body)-50:]) {
		t.Fatal("the last 50 bytes differ")
	}
	must(t, e.Do("GET", "/v1/batches/"+res.ID+"/archive", key, nil, "If-None-Match", etag), 304, "")
	must(t, e.Do("GET", "/v1/batches/"+res.ID+"/archive", key, nil, "Range", fmt.Sprintf("bytes=%d-", len(r.Body)+10)), 416, "")
	head := e.Do("HEAD", "/v1/batches/"+res.ID+"/archive", key, nil)
	must(t, head, 200, "")
	if len(head.Body) != 0 || head.Header.Get("ETag") != etag {
		t.Fatalf("HEAD: %d bytes, ETag %q", len(head.Body), head.Header.Get("ETag"))
	}
	again := e.Do("GET", "/v1/batches/"+res.ID+"/archive", key, nil)
	if !bytes.Equal(again.Body, r.Body) {
		t.Fatal("a finished batch's archive changed between two reads")
	}
}

// TestAPI_Batch_OpenArchive: while a batch is open its archive streams what succeeded so far,
// without ETag or Range.
func TestAPI_Batch_OpenArchive(t *testing.T) {
	e := testenv.Start(t)
	_, key := e.NewAccount(100)
	png := testenv.Sample(t, "images/sample.png")
	r := e.Do("POST", "/v1/batches", key, map[string]any{"jobs": batchItems(2, "png", "jpeg", len(png))})
	must(t, r, 200, "")
	var res batchReservation
	r.JSON(t, &res)
	must(t, e.Upload(res.Jobs[0].UploadURL, png), 200, "")
	must(t, e.Do("POST", "/v1/batches/"+res.ID+"/start", key, nil), 200, "")
	e.WaitFinished(key, res.Jobs[0].Job.ID)
	a := e.Do("GET", "/v1/batches/"+res.ID+"/archive", key, nil)
	must(t, a, 200, "")
	if a.Header.Get("ETag") != "" || a.Header.Get("Accept-Ranges") == "bytes" {
		t.Fatalf("an open batch's archive has ETag %q, Accept-Ranges %q", a.Header.Get("ETag"), a.Header.Get("Accept-Ranges"))
	}
	zr, err := zip.NewReader(bytes.NewReader(a.Body), int64(len(a.Body)))
	if err != nil || len(zr.File) != 2 {
		t.Fatalf("open archive: %v, %d entries", err, len(zr.File))
	}
	var m manifest
	readZipJSON(t, zr.File[0], &m)
	if m.Status != "open" || m.Items[0].Status != "succeeded" || m.Items[1].Status != "created" {
		t.Fatalf("manifest of an open batch: %+v", m)
	}
	r = e.Do("POST", "/v1/batches/"+res.ID+"/cancel", key, nil)
	must(t, r, 200, "")
	var v batchView
	r.JSON(t, &v)
	if v.Status != "finished" || v.Counts["cancelled"] != 1 || v.Counts["succeeded"] != 1 {
		t.Fatalf("cancelled batch: %+v", v)
	}
}

// TestAPI_Batch_Errors: bad batches are refused whole with a clear error and reserve nothing.
func TestAPI_Batch_Errors(t *testing.T) {
	e := testenv.Start(t)
	acct, key := e.NewAccount(3)
	must(t, e.Do("POST", "/v1/batches", "", map[string]any{"jobs": batchItems(1, "png", "jpeg", 10)}), 401, "unauthorized")
	must(t, e.Do("POST", "/v1/batches", key, map[string]any{"jobs": []any{}}), 400, "invalid_request")
	must(t, e.Do("POST", "/v1/batches", key, map[string]any{}), 400, "invalid_request")
	must(t, e.Do("POST", "/v1/batches", key, map[string]any{"jobs": batchItems(501, "png", "jpeg", 10)}), 400, "invalid_request")
	must(t, e.Do("POST", "/v1/batches", key, map[string]any{"jobs": []any{map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": 10}, 7}}), 400, "invalid_request")
	bad := batchItems(3, "png", "jpeg", 10)
	bad[2]["target_format"] = "wav"
	r := e.Do("POST", "/v1/batches", key, map[string]any{"jobs": bad})
	must(t, r, 400, "unsupported_format")
	if !strings.Contains(string(r.Body), "jobs[2]") {
		t.Fatalf("the error does not name the item: %s", r.Body)
	}
	big := batchItems(2, "png", "jpeg", 10)
	big[1]["input_bytes"] = 3_000_000_000
	r = e.Do("POST", "/v1/batches", key, map[string]any{"jobs": big})
	must(t, r, 400, "file_too_large")
	if !strings.Contains(string(r.Body), "jobs[1]") {
		t.Fatalf("the error does not name the item: %s", r.Body)
	}
	// Over the cap: 403 and nothing reserved.
	must(t, e.Do("POST", "/v1/batches", key, map[string]any{"jobs": batchItems(4, "png", "jpeg", 10)}), 403, "limit_reached")
	if got := e.Account(acct)["reserved_cents"]; got != float64(0) {
		t.Fatalf("reserved_cents %v after refused batches", got)
	}
	jobs := e.Do("GET", "/v1/jobs", key, nil)
	must(t, jobs, 200, "")
	if !strings.Contains(string(jobs.Body), `"data":[]`) {
		t.Fatalf("jobs after refused batches: %s", jobs.Body)
	}
	// One Idempotency-Key for the batch.
	body := map[string]any{"jobs": batchItems(2, "png", "jpeg", 10)}
	first := e.Do("POST", "/v1/batches", key, body, "Idempotency-Key", "b-1")
	must(t, first, 200, "")
	replay := e.Do("POST", "/v1/batches", key, body, "Idempotency-Key", "b-1")
	must(t, replay, 200, "")
	if !bytes.Equal(first.Body, replay.Body) {
		t.Fatal("the replay differs from the first answer")
	}
	if got := e.Account(acct)["reserved_cents"]; got != float64(2) {
		t.Fatalf("reserved_cents %v after a batch and its replay, want 2", got)
	}
	must(t, e.Do("POST", "/v1/batches", key, map[string]any{"jobs": batchItems(1, "png", "jpeg", 10)}, "Idempotency-Key", "b-1"), 409, "idempotency_mismatch")
	var res batchReservation
	first.JSON(t, &res)
	_, other := e.NewAccount(10)
	for _, path := range []string{"", "/archive"} {
		must(t, e.Do("GET", "/v1/batches/"+res.ID+path, other, nil), 404, "not_found")
		must(t, e.Do("GET", "/v1/batches/bat_nope"+path, key, nil), 404, "not_found")
	}
	must(t, e.Do("POST", "/v1/batches/"+res.ID+"/start", other, nil), 404, "not_found")
	must(t, e.Do("POST", "/v1/batches/"+res.ID+"/cancel", other, nil), 404, "not_found")
	must(t, e.Do("GET", "/v1/batches/"+res.ID+"?wait=61", key, nil), 400, "invalid_request")
	// Nothing uploaded: start leaves the jobs created and can be repeated.
	r = e.Do("POST", "/v1/batches/"+res.ID+"/start", key, nil)
	must(t, r, 200, "")
	var v batchView
	r.JSON(t, &v)
	if v.Counts["created"] != 2 || v.Status != "open" {
		t.Fatalf("start with nothing uploaded: %+v", v)
	}
	r = e.Do("POST", "/v1/batches/"+res.ID+"/cancel", key, nil)
	must(t, r, 200, "")
	r.JSON(t, &v)
	if v.Counts["cancelled"] != 2 || v.Status != "finished" {
		t.Fatalf("cancelled batch: %+v", v)
	}
}

func readZipFile(t *testing.T, f *zip.File) []byte {
	t.Helper()
	rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", f.Name, err)
	}
	return data
}

func readZipJSON(t *testing.T, f *zip.File, v any) {
	t.Helper()
	if err := json.Unmarshal(readZipFile(t, f), v); err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
}

// TestWebhooks_BatchFinished: when a batch's last job finishes, each endpoint of the account
// gets one batch.finished, signed as job events are, carrying the batch as GET shows it.
func TestWebhooks_BatchFinished(t *testing.T) {
	for _, backend := range []string{"bbolt", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			e := startOn(t, backend, fastWebhooks)
			acct, key := e.NewAccount(10)
			recv := newReceiver(t, nil)
			ep := addEndpoint(t, e, acct, recv.URL+"/hook")
			png := testenv.Sample(t, "images/sample.png")
			r := e.Do("POST", "/v1/batches", key, map[string]any{"jobs": batchItems(2, "png", "jpeg", len(png))})
			must(t, r, 200, "")
			var res batchReservation
			r.JSON(t, &res)
			for _, j := range res.Jobs {
				must(t, e.Upload(j.UploadURL, png), 200, "")
			}
			must(t, e.Do("POST", "/v1/batches/"+res.ID+"/start", key, nil), 200, "")
			if v := getBatch(t, e, key, res.ID, "?wait=60"); v.Status != "finished" {
				t.Fatalf("batch %+v", v)
			}
			got := recv.wait(t, 3) // two job.succeeded and one batch.finished, in any order
			var batchEvents []received
			for _, g := range got {
				if g.header.Get(webhook.EventTypeHeader) == "batch.finished" {
					batchEvents = append(batchEvents, g)
				}
			}
			if len(batchEvents) != 1 {
				t.Fatalf("%d batch.finished events of %d", len(batchEvents), len(got))
			}
			ev := batchEvents[0]
			if err := webhook.Verify(ep.Secret, ev.header.Get(webhook.SignatureHeader), ev.body, time.Now(), webhook.DefaultTolerance); err != nil {
				t.Fatalf("signature: %v", err)
			}
			wantID := "evt_" + res.ID + "_finished"
			var body struct {
				ID   string `json:"id"`
				Type string `json:"type"`
				Data struct {
					Batch map[string]any `json:"batch"`
				} `json:"data"`
			}
			if err := json.Unmarshal(ev.body, &body); err != nil {
				t.Fatal(err)
			}
			if ev.header.Get(webhook.EventIDHeader) != wantID || body.ID != wantID || body.Type != "batch.finished" {
				t.Fatalf("event %s, headers %v", ev.body, ev.header)
			}
			api := e.Do("GET", "/v1/batches/"+res.ID, key, nil).Map(t)
			for k, v := range api {
				if a, b := mustJSONValue(t, v), mustJSONValue(t, body.Data.Batch[k]); a != b {
					t.Fatalf("batch field %s: event %s, GET %s", k, b, a)
				}
			}
			waitDelivery(t, e, acct, wantID+"."+ep.ID, "delivered")
		})
	}
}
