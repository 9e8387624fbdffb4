package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// sampleFile writes n bytes of a pattern to a file of the test and opens it.
func sampleFile(t *testing.T, n int) ([]byte, *os.File) {
	t.Helper()
	data := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
	path := filepath.Join(t.TempDir(), "in.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return data, f
}

// TestClient_UploadOfAFileReportsProgress: a file uploaded with a progress function is sent
// whole (by the kernel, from a descriptor of its own), its progress only grows, never past
// its size, and ends at its size; the caller's offset stays where it was.
func TestClient_UploadOfAFileReportsProgress(t *testing.T) {
	data, f := sampleFile(t, 4<<20+3)
	if _, err := f.Seek(3, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
	}))
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	var reports [][2]int64
	c := &Client{}
	size := int64(len(data) - 3)
	err := c.UploadWithProgress(context.Background(), srv.URL+"/uploads/job_1", f, size, func(done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, [2]int64{done, total})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data[3:]) {
		t.Fatalf("server got %d bytes, want the %d from offset 3", len(got), size)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) == 0 || reports[len(reports)-1] != [2]int64{size, size} {
		t.Fatalf("progress %v, want it to end at (%d, %d)", reports, size, size)
	}
	for i, r := range reports {
		if r[1] != size || r[0] <= 0 || r[0] > size || (i > 0 && r[0] < reports[i-1][0]) {
			t.Fatalf("progress %v: report %d is %v, want growing values in (0, %d]", reports, i, r, size)
		}
	}
	if off, err := f.Seek(0, io.SeekCurrent); err != nil || off != 3 {
		t.Fatalf("the caller's offset after the upload: %d, %v; want 3", off, err)
	}
}

// TestClient_UploadOfAFileThatChangesSizeFails: a file that grows or shrinks while it is sent
// fails the upload with an error that says so, even when object storage accepted the bytes
// (they may mix the file before and after), and it is not sent again.
func TestClient_UploadOfAFileThatChangesSizeFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(path string) error
	}{
		{"grows", func(path string) error {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			_, err = f.Write([]byte("more"))
			return errors.Join(err, f.Close())
		}},
		{"shrinks", func(path string) error { return os.Truncate(path, 1000) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, f := sampleFile(t, 1<<20)
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				// The file changes while its body is on the way: after the first bytes
				// arrived, before the rest is read.
				if _, err := io.ReadFull(r.Body, make([]byte, 100)); err != nil {
					t.Errorf("reading the first bytes: %v", err)
				}
				if err := tc.change(f.Name()); err != nil {
					t.Errorf("changing the file: %v", err)
				}
				io.Copy(io.Discard, r.Body)
			}))
			t.Cleanup(srv.Close)
			c := &Client{}
			err := c.UploadWithProgress(context.Background(), srv.URL+"/uploads/job_1", f, int64(len(data)), func(int64, int64) {})
			if err == nil || !strings.Contains(err.Error(), "changed size while it was sent") {
				t.Fatalf("Upload of a file that %s while sent: %v, want an error saying it changed size", tc.name, err)
			}
			if n.Load() != 1 {
				t.Fatalf("%d attempts, want 1", n.Load())
			}
		})
	}
}

// TestClient_UploadOfAFileShorterThanItsSizeIsNotSent: a file that holds fewer bytes than the
// size to send (it was cut after its size was taken) is refused before anything is sent.
func TestClient_UploadOfAFileShorterThanItsSizeIsNotSent(t *testing.T) {
	data, f := sampleFile(t, 1000)
	srv, n := scripted(t)
	c := &Client{}
	err := c.Upload(context.Background(), srv.URL+"/uploads/job_1", f, int64(len(data))+1)
	if err == nil || !strings.Contains(err.Error(), "holds 1000 bytes from offset 0, fewer than the 1001 to send") {
		t.Fatalf("Upload of 1001 bytes of a 1000-byte file: %v, want an error saying it is short", err)
	}
	if n.Load() != 0 {
		t.Fatalf("%d requests, want none", n.Load())
	}
}
