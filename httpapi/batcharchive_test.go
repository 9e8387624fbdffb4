package httpapi

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/store"
)

// TestBatchArchive_Size holds archivePlan.size, which the finished archive's Content-Length and
// Range rely on, to the bytes archive/zip writes, for empty and non-empty entries and names of
// several lengths.
func TestBatchArchive_Size(t *testing.T) {
	for _, sizes := range [][]int64{nil, {0}, {1}, {1, 70_000, 3}, {5, 0, 12345, 1 << 20}} {
		plan := archivePlan{manifest: []byte(`{"batch_id":"bat_x","items":[]}` + "\n"), modified: time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)}
		data := map[string][]byte{}
		for i, n := range sizes {
			id := "job_" + strings.Repeat("a", i+1)
			data[id] = bytes.Repeat([]byte{byte(i)}, int(n))
			plan.entries = append(plan.entries, archiveEntry{name: strings.Repeat("n", i+1) + ".bin", job: store.Job{ID: id}, size: n})
		}
		var buf bytes.Buffer
		err := plan.write(context.Background(), &buf, func(_ context.Context, j store.Job) (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(data[j.ID])), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := plan.size(), int64(buf.Len()); got != want {
			t.Fatalf("sizes %v: predicted %d bytes, wrote %d", sizes, got, want)
		}
		zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil || len(zr.File) != len(sizes)+1 {
			t.Fatalf("sizes %v: %v", sizes, err)
		}
	}
}

// TestBatchArchive_ShortOutput: an output shorter than recorded fails the write instead of
// producing a zip that lies about it.
func TestBatchArchive_ShortOutput(t *testing.T) {
	plan := archivePlan{manifest: []byte("{}\n"), entries: []archiveEntry{{name: "0.bin", job: store.Job{ID: "job_a"}, size: 10}}}
	err := plan.write(context.Background(), io.Discard, func(context.Context, store.Job) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader("short")), nil
	})
	if err == nil || !strings.Contains(err.Error(), "5 bytes, recorded 10") {
		t.Fatalf("write with a short output: %v", err)
	}
}

// TestBatchArchive_ReaderSeeks: the seekable reader gives the same bytes at any offset as the
// archive written whole, re-running the writer when it seeks back.
func TestBatchArchive_ReaderSeeks(t *testing.T) {
	plan := archivePlan{manifest: []byte("{}\n"), entries: []archiveEntry{{name: "0.bin", job: store.Job{ID: "job_a"}, size: 5000}}}
	open := func(context.Context, store.Job) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(bytes.Repeat([]byte("z"), 5000))), nil
	}
	var whole bytes.Buffer
	if err := plan.write(context.Background(), &whole, open); err != nil {
		t.Fatal(err)
	}
	a := &archiveReader{size: plan.size(), ctx: context.Background(), gen: func(ctx context.Context, w io.Writer) error { return plan.write(ctx, w, open) }}
	defer a.Close()
	for _, off := range []int64{100, 0, 4000, 50} {
		if _, err := a.Seek(off, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 200)
		if _, err := io.ReadFull(a, got); err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if !bytes.Equal(got, whole.Bytes()[off:off+200]) {
			t.Fatalf("bytes at %d differ", off)
		}
	}
	if end, _ := a.Seek(0, io.SeekEnd); end != int64(whole.Len()) {
		t.Fatalf("size %d, wrote %d", end, whole.Len())
	}
}

// FuzzDecodeBatch: whatever the body, the batch decoder answers 1 to MaxBatchJobs items with
// sizes in range, or a 400 API error; it never panics.
func FuzzDecodeBatch(f *testing.F) {
	f.Add([]byte(`{"jobs":[{"input_format":"png","target_format":"jpeg","input_bytes":10}]}`))
	f.Add([]byte(`{"jobs":[]}`))
	f.Add([]byte(`{"jobs":[{"input_format":"png","target_format":"jpeg","input_bytes":10},null,7]}`))
	f.Add([]byte(`{"jobs":[{"input_format":"png","target_format":"jpeg","input_bytes":10,"options":{"quality":5}}],"jobs":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := decodeBatch(body)
		if err == nil {
			if len(items) < 1 || len(items) > store.MaxBatchJobs {
				t.Fatalf("accepted %d items", len(items))
			}
			for _, it := range items {
				if it.size < 1 || it.size > store.MaxInputBytes {
					t.Fatalf("accepted size %d", it.size)
				}
			}
			return
		}
		var apiErr *Error
		if !errors.As(err, &apiErr) || statusOf(apiErr) != 400 {
			t.Fatalf("error %v is not a 400 API error", err)
		}
	})
}
