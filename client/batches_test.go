package client_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// TestClient_Batch: the client's batch calls against a real service: reserve, upload, start,
// wait, and the archive with its manifest.
func TestClient_Batch(t *testing.T) {
	e := testenv.Start(t)
	c := &client.Client{BaseURL: e.URL, Key: e.Key, HTTP: e.HTTP}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	png := testenv.Sample(t, "images/sample.png")
	reqs := []client.CreateJobRequest{
		{InputFormat: "png", TargetFormat: "jpeg", InputBytes: int64(len(png))},
		{InputFormat: "png", TargetFormat: "webp", InputBytes: int64(len(png))},
	}
	res, err := c.CreateBatch(ctx, reqs, "batch-key")
	if err != nil || len(res.Jobs) != 2 {
		t.Fatalf("CreateBatch = %+v, %v", res, err)
	}
	again, err := c.CreateBatch(ctx, reqs, "batch-key")
	if err != nil || again.ID != res.ID {
		t.Fatalf("replayed CreateBatch = %s, %v; want %s", again.ID, err, res.ID)
	}
	for _, r := range res.Jobs {
		if err := c.Upload(ctx, r.UploadURL, bytes.NewReader(png), int64(len(png))); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := c.StartBatch(ctx, res.ID); err != nil || b.Counts.Created != 0 {
		t.Fatalf("StartBatch = %+v, %v", b, err)
	}
	b, err := c.WaitBatch(ctx, res.ID, nil)
	if err != nil || !b.Finished() || b.Counts.Succeeded != 2 {
		t.Fatalf("WaitBatch = %+v, %v", b, err)
	}
	var buf bytes.Buffer
	n, err := c.DownloadBatchArchive(ctx, res.ID, &buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("DownloadBatchArchive = %d, %v", n, err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || len(zr.File) != 3 {
		t.Fatalf("archive: %v", err)
	}
	rc, err := zr.File[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var m client.BatchManifest
	if err := json.NewDecoder(rc).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if m.BatchID != res.ID || len(m.Items) != 2 || m.Items[1].File == nil || *m.Items[1].File != zr.File[2].Name {
		t.Fatalf("manifest %+v", m)
	}
	if _, err := c.GetBatch(ctx, "bat_none", 0); !client.IsCode(err, "not_found") {
		t.Fatalf("GetBatch of no batch: %v", err)
	}
	if b, err := c.CancelBatch(ctx, res.ID); err != nil || b.Counts.Succeeded != 2 {
		t.Fatalf("CancelBatch of a finished batch = %+v, %v", b, err)
	}
}
