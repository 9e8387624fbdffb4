package service_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// TestObjectStorage_StalledUploadEndsAndRetryProceeds, on the service's own object-storage
// listener: a first upload that sends 100 of 1,000,000 bytes and stops is cut after
// --storage-progress-timeout, nothing of it stays in blobs/tmp, and a retry of the same URL
// is stored and the job converts. Before, every retry was 409 upload_in_progress for as long
// as the first upload stalled.
func TestObjectStorage_StalledUploadEndsAndRetryProceeds(t *testing.T) {
	testenv.LocalBlobsOnly(t, "the local blob listener's upload timeouts")
	e := testenv.Start(t, func(c *service.Config) { c.StorageProgressTimeout = time.Second })
	data := append([]byte("n\n"), bytes.Repeat([]byte("1\n"), 499_999)...)
	res := e.Create(e.Key, "csv", "json", int64(len(data)))
	blob := e.Main.BlobURL()
	conn, err := net.Dial("tcp", strings.TrimPrefix(blob, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", strings.TrimPrefix(res.UploadURL, blob), len(data))
	conn.Write(data[:100])
	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled upload within 60 s: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("stalled upload: status %d, want 408", resp.StatusCode)
	}
	if left, _ := os.ReadDir(filepath.Join(e.Cfg.DataDir, "blobs", "tmp")); len(left) != 0 {
		t.Fatalf("left in blobs/tmp after the stalled upload: %d files", len(left))
	}
	testenv.MustStatus(t, e.Upload(res.UploadURL, data), 200, "")
	testenv.MustStatus(t, e.Start(e.Key, res.Job.ID), 200, "")
	if j := e.WaitFinished(e.Key, res.Job.ID); j.Status != "succeeded" {
		t.Fatalf("job after the retried upload: %s", j.Status)
	}
}
