package blobstore

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// download GETs the job's output through the handler and returns the response and its body.
func (e *testEnv) download(id string, size int64) (*http.Response, string) {
	e.t.Helper()
	resp := e.do("GET", e.downloadURL(id, size), nil, -1, nil)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, string(b)
}

// checkServed asserts that OutputInfo and a download give out and meta for body.
func checkServed(t *testing.T, e *testEnv, id, body string, out Output, meta OutputMeta) {
	t.Helper()
	if got, gotMeta, err := e.st.OutputInfo(id); err != nil || got != out || gotMeta != meta {
		t.Fatalf("OutputInfo = %+v, %+v, %v; want %+v, %+v", got, gotMeta, err, out, meta)
	}
	resp, got := e.download(id, out.Bytes)
	if resp.StatusCode != http.StatusOK || got != body || resp.Header.Get("Content-Type") != meta.ContentType ||
		resp.Header.Get("ETag") != `"`+out.SHA256+`"` {
		t.Fatalf("download: %d %q, Content-Type %q, ETag %q", resp.StatusCode, got, resp.Header.Get("Content-Type"), resp.Header.Get("ETag"))
	}
}

// TestOutput_MetadataInAttribute: on Linux an output's metadata is an extended attribute of
// its file, and no sidecar is written.
func TestOutput_MetadataInAttribute(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("outputs keep their metadata in an extended attribute only on Linux")
	}
	e := newTestEnv(t)
	meta := OutputMeta{ContentType: "image/png", Filename: "out.png"}
	out := e.mustWriteOutput("job_attr", "hello", meta)
	f, err := os.Open(filepath.Join(e.dir, "outputs", "job_attr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := getAttr(f, metaAttr)
	if errors.Is(err, errNoMetaAttr) {
		t.Skipf("the test directory's filesystem keeps no user attributes (%s)", e.dir)
	} else if err != nil {
		t.Fatal(err)
	}
	var side outputSidecar
	if err := json.Unmarshal(b, &side); err != nil || side != (outputSidecar{Bytes: 5, SHA256: out.SHA256, ContentType: "image/png", Filename: "out.png"}) {
		t.Fatalf("attribute %s: %+v, %v", b, side, err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "outputs", "job_attr"+metaSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a sidecar was written beside the attribute: %v", err)
	}
	checkServed(t, e, "job_attr", "hello", out, meta)
}

// TestOutput_Sidecar: where there are no user attributes, and for outputs an earlier version
// wrote, the metadata is a sidecar file; an output committed over such an output replaces the
// sidecar's metadata, and a file with neither attribute nor sidecar is no output.
func TestOutput_Sidecar(t *testing.T) {
	e := newTestEnv(t)
	e.st.metaAttrs = false
	meta := OutputMeta{ContentType: "text/plain", Filename: "a.txt"}
	out := e.mustWriteOutput("job_side", "first", meta)
	if _, err := os.Stat(filepath.Join(e.dir, "outputs", "job_side"+metaSuffix)); err != nil {
		t.Fatalf("no sidecar: %v", err)
	}
	checkServed(t, e, "job_side", "first", out, meta)

	e.st.metaAttrs = true // a newer binary over the same directory
	checkServed(t, e, "job_side", "first", out, meta)
	meta2 := OutputMeta{ContentType: "image/jpeg", Filename: "b.jpg"}
	out2 := e.mustWriteOutput("job_side", "second!", meta2)
	checkServed(t, e, "job_side", "second!", out2, meta2)
	if runtime.GOOS == "linux" {
		if _, err := os.Stat(filepath.Join(e.dir, "outputs", "job_side"+metaSuffix)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the old sidecar outlived the output it described: %v", err)
		}
	}

	if err := os.WriteFile(filepath.Join(e.dir, "outputs", "job_cut"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.st.OutputInfo("job_cut"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("OutputInfo of a file without metadata = %v, want ErrNotFound", err)
	}
	if resp, _ := e.download("job_cut", 4); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("download of a file without metadata: %d, want 404", resp.StatusCode)
	}
}
