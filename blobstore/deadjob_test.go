package blobstore

import (
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// A finished (or cancelled, or expired) job takes no upload, and neither does a job that no
// longer exists: the PUT is refused before its body is read, and nothing is stored. Before
// issue 18 only a started job was sealed, so a job cancelled before start took a 2 GB upload,
// kept until retention.
func TestHandler_Put_RefusedForDeadJob(t *testing.T) {
	e, set := newStartedEnv(t)
	set.finish("job_done")
	set.remove("job_gone")
	wantError(t, e.put(e.uploadURL("job_done", 5), "hello"), 409, "job_finished")
	wantError(t, e.put(e.uploadURL("job_gone", 5), "hello"), 404, "not_found")

	// Refused before streaming: the answer comes while the client still holds the body open
	// (a 2 GB upload is not read, let alone written, to be thrown away).
	const size = 2_000_000_000
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest("PUT", e.uploadURL("job_done", size), pr)
	req.ContentLength = size
	got := make(chan *http.Response, 1)
	go func() {
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Errorf("PUT: %v", err)
			close(got)
			return
		}
		got <- resp
	}()
	if _, err := pw.Write(make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-got:
		if resp == nil {
			t.FailNow()
		}
		wantError(t, resp, 409, "job_finished")
	case <-time.After(60 * time.Second):
		t.Fatal("no answer while the body was still open: the PUT streams a dead job's upload")
	}
	for _, sub := range []string{"uploads", "tmp"} {
		assertDirEmpty(t, filepath.Join(e.dir, sub))
	}
}

// A job that finishes while its PUT streams (cancelled meanwhile) is refused at the commit,
// under the id lock, and the streamed body is discarded.
func TestHandler_Put_JobFinishesWhileStreaming(t *testing.T) {
	e, set := newStartedEnv(t)
	pw, resp := e.startPut("job_abc", 10, "hello")
	set.finish("job_abc")
	io.WriteString(pw, "world")
	pw.Close()
	wantError(t, <-resp, 409, "job_finished")
	for _, sub := range []string{"uploads", "tmp"} {
		assertDirEmpty(t, filepath.Join(e.dir, sub))
	}
}

// DeleteInput removes a finished job's input and keeps its output servable; InputIDs lists
// only ids with an input.
func TestStore_DeleteInputKeepsOutput(t *testing.T) {
	e, set := newStartedEnv(t)
	e.mustUpload("job_abc", "input")
	if _, err := e.seal("job_abc"); err != nil {
		t.Fatal(err)
	}
	out := e.mustWriteOutput("job_abc", "output", OutputMeta{ContentType: "text/plain"})
	e.mustUpload("job_other", "other input")
	e.mustWriteOutput("job_outonly", "x", OutputMeta{})
	if ids, err := e.st.InputIDs(); err != nil || len(ids) != 2 || ids[0] != "job_abc" || ids[1] != "job_other" {
		t.Fatalf("InputIDs = %v, %v; want job_abc, job_other", ids, err)
	}
	set.finish("job_abc")
	if err := e.st.DeleteInput("job_abc"); err != nil {
		t.Fatal(err)
	}
	if err := e.st.DeleteInput("job_abc"); err != nil {
		t.Fatalf("a second DeleteInput: %v", err)
	}
	if fileExists(t, filepath.Join(e.dir, "uploads", "job_abc")) {
		t.Fatal("the input is still there")
	}
	if got := readFile(t, filepath.Join(e.dir, "uploads", "job_other")); got != "other input" {
		t.Fatalf("another job's input: %q", got)
	}
	resp := e.do("GET", e.downloadURL("job_abc", out.Bytes), nil, 0, nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "output" {
		t.Fatalf("output after DeleteInput: %d %q", resp.StatusCode, b)
	}
	if err := e.st.DeleteInput("../x"); err != ErrInvalidID {
		t.Fatalf("DeleteInput(../x) = %v", err)
	}
}
