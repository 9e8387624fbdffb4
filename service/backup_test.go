package service_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// TestBackup_PausedDownloadDoesNotStallWrites holds GET /v1/admin/backup open without reading
// its body, over a real connection, and makes writes through the
// API meanwhile; every one must complete while the download is paused. The database is
// 16 MiB (a ballast bucket written before the service starts, just under bbolt's 16 MiB
// mapping), larger than the socket buffers, so the old backup, which streamed from one read
// transaction, sat in that transaction, and the writes, which grow the file past the mapping,
// waited for it (for up to the 2-minute write timeout).
func TestBackup_PausedDownloadDoesNotStallWrites(t *testing.T) {
	testenv.BboltOnly(t, "the bbolt backup endpoint")
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, "convsvc.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("test_ballast"))
		if err != nil {
			return err
		}
		return b.Put([]byte("ballast"), make([]byte, 16<<20-384<<10))
	})
	if err == nil {
		err = db.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	e := testenv.Start(t, func(c *service.Config) { c.DataDir = dir })

	conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/admin/backup HTTP/1.1\r\nHost: convsvc\r\nAuthorization: Bearer %s\r\n\r\n", e.AdminToken)
	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	br := bufio.NewReaderSize(conn, 4096)
	tp := textproto.NewReader(br)
	status, err := tp.ReadLine()
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 200") {
		t.Fatalf("backup status %q: %v", status, err)
	}
	header, err := tp.ReadMIMEHeader()
	if err != nil {
		t.Fatal(err)
	}
	size, err := strconv.ParseInt(header.Get("Content-Length"), 10, 64)
	if err != nil || size < 16<<20-384<<10 {
		t.Fatalf("backup Content-Length %q: %v", header.Get("Content-Length"), err)
	}

	// The download is paused: nothing more is read. Writes carry on.
	client := &http.Client{Timeout: 60 * time.Second}
	var slowest time.Duration
	began := time.Now()
	for i := range 200 {
		t0 := time.Now()
		body := fmt.Sprintf(`{"spend_cap_cents": %d}`, 100_000+i)
		req, _ := http.NewRequest("PATCH", e.URL+"/v1/admin/accounts/"+e.AccountID, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.AdminToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("write %d did not complete while the backup download was paused: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("write %d: status %d", i, resp.StatusCode)
		}
		slowest = max(slowest, time.Since(t0))
	}
	// A figure for docs/reliability.md, not an assertion.
	t.Logf("200 writes while the backup download was paused: %s in all, slowest %s", time.Since(began), slowest)
	res := e.Create(e.Key, "csv", "json", 10)

	// The paused download resumes and is whole: the state from before the writes.
	conn.SetReadDeadline(time.Now().Add(120 * time.Second))
	var buf bytes.Buffer
	if n, err := io.CopyN(&buf, br, size); err != nil {
		t.Fatalf("read backup: %d of %d bytes: %v", n, size, err)
	}
	path := filepath.Join(t.TempDir(), "backup", "convsvc.db")
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := testenv.OpenStore(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
	acct, err := st.Account(e.AccountID)
	if err != nil || acct.SpendCapCents != service.DefaultSpendCapCents {
		t.Fatalf("account in backup: cap %d, err %v; want the cap from before the writes", acct.SpendCapCents, err)
	}
	if ok, _ := st.JobExists(res.Job.ID); ok {
		t.Fatal("a job created after the backup is in it")
	}
}
