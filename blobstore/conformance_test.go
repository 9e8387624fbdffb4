package blobstore_test

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/convsvc/convsvc/blobstore"
	"github.com/convsvc/convsvc/blobstore/blobtest"
)

// TestConformance runs the object-storage conformance suite against the local store, served
// by its own handler on a real listener, with the real clock.
func TestConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blobtest.Backend {
		b := &localBackend{started: map[string]bool{}}
		srv := httptest.NewUnstartedServer(nil)
		st, err := blobstore.Open(blobstore.Config{
			Dir:       t.TempDir(),
			PublicURL: "http://" + srv.Listener.Addr().String(),
			Logger:    slog.New(slog.DiscardHandler),
			JobState:  b.jobState,
		})
		if err != nil {
			t.Fatal(err)
		}
		srv.Config.Handler = st.Handler()
		srv.Start()
		t.Cleanup(srv.Close)
		b.st = st
		return b
	})
}

// localBackend adapts *blobstore.Store to the suite. The local store keeps one output per
// job, so the attempt is ignored; Config.JobState answers from the set of ids Seal started.
type localBackend struct {
	st      *blobstore.Store
	mu      sync.Mutex
	started map[string]bool
}

func (b *localBackend) jobState(id string) (blobstore.JobState, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started[id] {
		return blobstore.JobStarted, nil
	}
	return blobstore.JobOpen, nil
}

func (b *localBackend) UploadURL(id string, size int64, expires time.Time) (string, error) {
	return b.st.UploadURL(id, size, expires), nil
}

func (b *localBackend) Seal(id string) (int64, error) {
	size := int64(-1)
	err := b.st.Seal(id, func(n int64) error {
		b.mu.Lock()
		b.started[id] = true
		b.mu.Unlock()
		size = n
		return nil
	})
	return size, err
}

func (b *localBackend) WriteOutput(id string, _ int, data []byte, meta blobstore.OutputMeta) (blobstore.Output, error) {
	p, err := b.st.CreateOutput(id)
	if err != nil {
		return blobstore.Output{}, err
	}
	defer p.Discard()
	if _, err := p.Write(data); err != nil {
		return blobstore.Output{}, err
	}
	return p.Commit(meta)
}

func (b *localBackend) WriteOutputThroughFile(id string, _ int, data []byte, meta blobstore.OutputMeta) (blobstore.Output, error) {
	p, err := b.st.CreateOutput(id)
	if err != nil {
		return blobstore.Output{}, err
	}
	return blobtest.CommitThroughFile(p, data, meta)
}

func (b *localBackend) DownloadURL(id string, _ int, out blobstore.Output, _ blobstore.OutputMeta, expires time.Time) (string, error) {
	return b.st.DownloadURL(id, out.Bytes, expires), nil
}

func (b *localBackend) UploadSHA256(id string) (string, error) { return b.st.UploadSHA256(id) }

func (b *localBackend) ReadInput(id string) ([]byte, error) {
	f, err := b.st.OpenInput(id)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func (b *localBackend) Delete(id string) error    { return b.st.Delete(id) }
func (b *localBackend) JobIDs() ([]string, error) { return b.st.JobIDs() }
func (b *localBackend) JobIDsAfter(after string, limit int) ([]string, error) {
	return b.st.JobIDsAfter(after, limit)
}
func (b *localBackend) InputIDsAfter(after string, limit int) ([]string, error) {
	return b.st.InputIDsAfter(after, limit)
}
func (b *localBackend) Check() error { return b.st.Check() }
