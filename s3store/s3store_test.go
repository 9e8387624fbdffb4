package s3store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/convsvc/convsvc/blobstore"
	"github.com/convsvc/convsvc/blobstore/blobtest"
	"github.com/convsvc/convsvc/internal/testing/tests3"
	"github.com/convsvc/convsvc/s3store"
)

func TestMain(m *testing.M) { os.Exit(tests3.Main(m)) }

// newStore returns a Store on a fresh bucket under a prefix, with its own scratch dir.
func newStore(t testing.TB, versioned bool) (*s3store.Store, tests3.Bucket, string) {
	t.Helper()
	bk := tests3.NewBucket(t, tests3.Options{Versioned: versioned})
	scratch := t.TempDir()
	st, err := s3store.New(s3store.Options{
		Endpoint: bk.Endpoint, Region: bk.Region, Bucket: bk.Name, Prefix: "/convsvc/",
		AccessKey: bk.AccessKey, SecretKey: bk.SecretKey, PathStyle: true, ScratchDir: scratch,
	})
	if err != nil {
		t.Fatal(err)
	}
	return st, bk, scratch
}

// TestConformance runs the object-storage conformance suite on S3, in an unversioned and in
// a versioned bucket.
func TestConformance(t *testing.T) {
	for _, versioned := range []bool{false, true} {
		name := map[bool]string{false: "Unversioned", true: "Versioned"}[versioned]
		t.Run(name, func(t *testing.T) {
			blobtest.Run(t, func(t *testing.T) blobtest.Backend {
				st, _, _ := newStore(t, versioned)
				return newS3Backend(st)
			})
		})
	}
}

// s3Backend adapts *s3store.Store to the suite. Like the job store's start, it records what
// the first Seal of a job found, and a repeated Seal changes nothing recorded.
type s3Backend struct {
	st     *s3store.Store
	mu     sync.Mutex
	sealed map[string]s3store.UploadInfo
}

func newS3Backend(st *s3store.Store) *s3Backend {
	return &s3Backend{st: st, sealed: make(map[string]s3store.UploadInfo)}
}

func (b *s3Backend) UploadURL(id string, size int64, expires time.Time) (string, error) {
	return b.st.UploadURL(id, size, expires)
}

func (b *s3Backend) Seal(id string) (int64, error) {
	size := int64(-1)
	err := b.st.Seal(id, func(info s3store.UploadInfo) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		if first, ok := b.sealed[id]; ok {
			info = first
		}
		b.sealed[id] = info
		size = info.Size
		return nil
	})
	return size, err
}

// UploadSHA256 is the hash Seal reported: the object store's checksum of the sealed copy.
func (b *s3Backend) UploadSHA256(id string) (string, error) {
	b.mu.Lock()
	info, ok := b.sealed[id]
	b.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("job %s was never sealed", id)
	}
	if info.SHA256 == "" {
		return "", fmt.Errorf("Seal of %s reported no SHA-256 (the store returned no checksum of the copy)", id)
	}
	return info.SHA256, nil
}

func (b *s3Backend) ReadInput(id string) ([]byte, error) {
	b.mu.Lock()
	info, ok := b.sealed[id]
	b.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("job %s was never sealed", id)
	}
	f, err := b.st.OpenInput(id, info)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func (b *s3Backend) WriteOutput(id string, attempt int, data []byte, meta blobstore.OutputMeta) (blobstore.Output, error) {
	p, err := b.st.CreateOutput(id, attempt)
	if err != nil {
		return blobstore.Output{}, err
	}
	defer p.Discard()
	if _, err := p.Write(data); err != nil {
		return blobstore.Output{}, err
	}
	return p.Commit(meta)
}

func (b *s3Backend) WriteOutputThroughFile(id string, attempt int, data []byte, meta blobstore.OutputMeta) (blobstore.Output, error) {
	p, err := b.st.CreateOutput(id, attempt)
	if err != nil {
		return blobstore.Output{}, err
	}
	return blobtest.CommitThroughFile(p, data, meta)
}

func (b *s3Backend) DownloadURL(id string, attempt int, _ blobstore.Output, meta blobstore.OutputMeta, expires time.Time) (string, error) {
	return b.st.DownloadURL(id, attempt, meta.Filename, meta.ContentType, expires)
}

func (b *s3Backend) Delete(id string) error    { return b.st.Delete(id) }
func (b *s3Backend) JobIDs() ([]string, error) { return b.st.JobIDs() }
func (b *s3Backend) JobIDsAfter(after string, limit int) ([]string, error) {
	return b.st.JobIDsAfter(after, limit)
}
func (b *s3Backend) InputIDsAfter(after string, limit int) ([]string, error) {
	return b.st.InputIDsAfter(after, limit)
}
func (b *s3Backend) Check() error { return b.st.Check() }

// TestUploadURL_DeterministicAndBound: the URL depends only on its arguments, signs the size
// as Content-Length, and is valid exactly until expires (X-Amz-Date = expires - 900 s).
func TestUploadURL_DeterministicAndBound(t *testing.T) {
	st, _, _ := newStore(t, false)
	expires := time.Date(2026, 11, 25, 18, 15, 0, 0, time.UTC)
	u1, err := st.UploadURL("job_abc", 1234, expires)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the SDK's clock moves on; the URL must not
	u2, err := st.UploadURL("job_abc", 1234, expires)
	if err != nil {
		t.Fatal(err)
	}
	if u1 != u2 {
		t.Fatalf("two reads gave different URLs:\n%s\n%s", u1, u2)
	}
	pu, err := url.Parse(u1)
	if err != nil {
		t.Fatal(err)
	}
	q := pu.Query()
	if got := q.Get("X-Amz-Date"); got != "20261125T180000Z" {
		t.Errorf("X-Amz-Date = %s, want 20261125T180000Z (expires - 900 s)", got)
	}
	if got := q.Get("X-Amz-Expires"); got != "900" {
		t.Errorf("X-Amz-Expires = %s, want 900", got)
	}
	if got := q.Get("X-Amz-SignedHeaders"); !strings.Contains(got, "content-length") {
		t.Errorf("X-Amz-SignedHeaders = %s, want content-length signed", got)
	}
	if !strings.HasSuffix(pu.Path, "/convsvc/uploads/job_abc") {
		t.Errorf("path = %s, want .../convsvc/uploads/job_abc", pu.Path)
	}
	if _, err := st.UploadURL("../etc", 1, expires); !errors.Is(err, blobstore.ErrInvalidID) {
		t.Errorf("UploadURL(../etc) error = %v, want ErrInvalidID", err)
	}
}

// TestUploadURL_ValidUntilExpires: a URL that expires in a few seconds still uploads.
func TestUploadURL_ValidUntilExpires(t *testing.T) {
	st, _, _ := newStore(t, false)
	id := blobtest.NewJobID()
	u, err := st.UploadURL(id, 3, time.Now().Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if r := blobtest.Put(t, u, []byte("abc")); r.Status != 200 {
		t.Fatalf("PUT: %d %s", r.Status, r.Body)
	}
}

// TestOpenInput_PinnedAtSeal: a PUT after Seal (the URL is still valid) must not change what
// is converted: in a versioned bucket and in an unversioned one OpenInput returns the sealed
// bytes (the copy Seal made), and Delete leaves nothing.
func TestOpenInput_PinnedAtSeal(t *testing.T) {
	for _, versioned := range []bool{false, true} {
		name := map[bool]string{false: "Unversioned", true: "Versioned"}[versioned]
		t.Run(name, func(t *testing.T) {
			st, bk, scratch := newStore(t, versioned)
			id := blobtest.NewJobID()
			orig, later := blobtest.RandomBytes(200_000), blobtest.RandomBytes(200_000)
			u, err := st.UploadURL(id, int64(len(orig)), time.Now().Add(10*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if r := blobtest.Put(t, u, orig); r.Status != 200 {
				t.Fatalf("PUT: %d %s", r.Status, r.Body)
			}
			var info s3store.UploadInfo
			if err := st.Seal(id, func(i s3store.UploadInfo) error { info = i; return nil }); err != nil {
				t.Fatal(err)
			}
			if info.Size != int64(len(orig)) || info.ETag == "" || (info.VersionID != "") != versioned {
				t.Fatalf("Seal gave %+v; want size %d, an ETag, version id iff versioned", info, len(orig))
			}
			// Unchanged: OpenInput returns the bytes, at offset 0, leaving no name in scratch.
			f, err := st.OpenInput(id, info)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(f)
			f.Close()
			if err != nil || !bytes.Equal(got, orig) {
				t.Fatalf("OpenInput read %d bytes, %v; want the %d uploaded", len(got), err, len(orig))
			}
			wantEmptyDir(t, scratch)

			if r := blobtest.Put(t, u, later); r.Status != 200 {
				t.Fatalf("second PUT: %d %s", r.Status, r.Body)
			}
			f, err = st.OpenInput(id, info)
			if err != nil {
				t.Fatalf("OpenInput after a later PUT: %v; want the sealed bytes", err)
			}
			got, err = io.ReadAll(f)
			f.Close()
			if err != nil || !bytes.Equal(got, orig) {
				t.Fatalf("OpenInput after a later PUT read other bytes (%d, %v); want the sealed ones", len(got), err)
			}
			wantEmptyDir(t, scratch)

			// Delete removes every version, not just the current one.
			if err := st.Delete(id); err != nil {
				t.Fatal(err)
			}
			vs, err := bk.Client().ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(bk.Name)})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(vs.Versions) + len(vs.DeleteMarkers); n != 0 {
				t.Fatalf("after Delete the bucket holds %d versions or delete markers, want 0", n)
			}
		})
	}
}

func TestOpenInput_Missing(t *testing.T) {
	st, _, scratch := newStore(t, false)
	_, err := st.OpenInput(blobtest.NewJobID(), s3store.UploadInfo{Size: 1, ETag: `"abc"`})
	if !errors.Is(err, blobstore.ErrNotFound) {
		t.Fatalf("OpenInput of nothing = %v; want ErrNotFound", err)
	}
	wantEmptyDir(t, scratch)
}

// TestOutputs_PerAttempt: a stale attempt's commit never replaces another attempt's output.
func TestOutputs_PerAttempt(t *testing.T) {
	st, _, scratch := newStore(t, false)
	b := newS3Backend(st)
	id := blobtest.NewJobID()
	meta := blobstore.OutputMeta{ContentType: "text/plain", Filename: "a.txt"}
	if _, err := b.WriteOutput(id, 2, []byte("second"), meta); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WriteOutput(id, 1, []byte("first, late"), meta); err != nil {
		t.Fatal(err)
	}
	u, err := st.DownloadURL(id, 2, meta.Filename, meta.ContentType, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if r := blobtest.Get(t, u); r.Status != 200 || string(r.Body) != "second" {
		t.Fatalf("attempt 2's output: %d %q; want 200 \"second\"", r.Status, r.Body)
	}
	// Discard leaves nothing, in scratch or in the bucket.
	p, err := st.CreateOutput(id, 3)
	if err != nil {
		t.Fatal(err)
	}
	p.Write([]byte("dropped"))
	p.Discard()
	u3, _ := st.DownloadURL(id, 3, "", "", time.Now().Add(time.Minute))
	if r := blobtest.Get(t, u3); r.Status != 404 {
		t.Fatalf("discarded output: %d; want 404", r.Status)
	}
	wantEmptyDir(t, scratch)
}

// TestStorageErrors: an unreachable endpoint and a missing bucket are ErrStorage, which also
// matches blobstore.ErrStorage.
func TestStorageErrors(t *testing.T) {
	_, bk, _ := newStore(t, false)
	for name, opts := range map[string]s3store.Options{
		"missing bucket": {Endpoint: bk.Endpoint, Bucket: bk.Name + "-missing"},
		"wrong secret":   {Endpoint: bk.Endpoint, Bucket: bk.Name, SecretKey: "wrong-secret-key"},
		"closed port":    {Endpoint: "http://127.0.0.1:1", Bucket: bk.Name},
	} {
		t.Run(name, func(t *testing.T) {
			opts.Region, opts.AccessKey, opts.PathStyle = bk.Region, bk.AccessKey, true
			if opts.SecretKey == "" {
				opts.SecretKey = bk.SecretKey
			}
			opts.ScratchDir, opts.OpTimeout = t.TempDir(), 20*time.Second
			st, err := s3store.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			for op, err := range map[string]error{
				"Check":  st.Check(),
				"JobIDs": func() error { _, err := st.JobIDs(); return err }(),
				"Seal":   st.Seal(blobtest.NewJobID(), func(s3store.UploadInfo) error { return nil }),
				"Delete": st.Delete(blobtest.NewJobID()),
				"OpenInput": func() error {
					_, err := st.OpenInput(blobtest.NewJobID(), s3store.UploadInfo{ETag: `"x"`})
					return err
				}(),
				"Commit": func() error {
					p, err := st.CreateOutput(blobtest.NewJobID(), 1)
					if err != nil {
						return err
					}
					p.Write([]byte("x"))
					_, err = p.Commit(blobstore.OutputMeta{})
					return err
				}(),
			} {
				if !errors.Is(err, s3store.ErrStorage) || !errors.Is(err, blobstore.ErrStorage) {
					t.Errorf("%s = %v; want ErrStorage", op, err)
				}
			}
		})
	}
	if _, err := s3store.New(s3store.Options{Endpoint: bk.Endpoint}); err == nil {
		t.Errorf("New without region, bucket and keys succeeded")
	}
}

func wantEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("scratch file left behind: %s", filepath.Join(dir, e.Name()))
	}
}

// TestLargeObjects_BoundedMemory: a 64 MiB input is downloaded and a 64 MiB output uploaded
// by streaming through the scratch dir, not through memory.
func TestLargeObjects_BoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 128 MiB")
	}
	const size = 64 << 20
	st, _, scratch := newStore(t, false)
	id := blobtest.NewJobID()
	data := blobtest.RandomBytes(size)
	u, err := st.UploadURL(id, size, time.Now().Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if r := blobtest.Put(t, u, data); r.Status != 200 {
		t.Fatalf("PUT: %d %s", r.Status, r.Body)
	}
	var info s3store.UploadInfo
	if err := st.Seal(id, func(i s3store.UploadInfo) error { info = i; return nil }); err != nil {
		t.Fatal(err)
	}

	allocated := func(fn func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	var f *os.File
	n := allocated(func() { f, err = st.OpenInput(id, info) })
	t.Logf("OpenInput of %d bytes allocated %d bytes", size, n)
	if n > 16<<20 {
		t.Errorf("OpenInput of %d bytes allocated %d bytes; want it streamed (< 16 MiB)", size, n)
	}
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if n, err := io.Copy(h, f); err != nil || n != size || !bytes.Equal(h.Sum(nil), sha256Of(data)) {
		t.Fatalf("OpenInput gave %d bytes (%v), or other bytes", n, err)
	}
	f.Close()

	p, err := st.CreateOutput(id, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write(data); err != nil {
		t.Fatal(err)
	}
	var out blobstore.Output
	n = allocated(func() { out, err = p.Commit(blobstore.OutputMeta{ContentType: "application/octet-stream"}) })
	t.Logf("Commit of %d bytes allocated %d bytes", size, n)
	if n > 16<<20 {
		t.Errorf("Commit of %d bytes allocated %d bytes; want it streamed (< 16 MiB)", size, n)
	}
	if err != nil || out.Bytes != size || out.SHA256 != hex.EncodeToString(sha256Of(data)) {
		t.Fatalf("Commit = %+v, %v", out, err)
	}
	wantEmptyDir(t, scratch)
}

func sha256Of(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

// TestUploadURL_SameOnEveryNode: two Stores with the same options (two nodes) give the same URL.
func TestUploadURL_SameOnEveryNode(t *testing.T) {
	st, bk, _ := newStore(t, false)
	other, err := s3store.New(s3store.Options{
		Endpoint: bk.Endpoint, Region: bk.Region, Bucket: bk.Name, Prefix: "convsvc",
		AccessKey: bk.AccessKey, SecretKey: bk.SecretKey, PathStyle: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	expires := time.Now().Add(5 * time.Minute).Truncate(time.Second)
	u1, err1 := st.UploadURL("job_same", 10, expires)
	u2, err2 := other.UploadURL("job_same", 10, expires.In(time.FixedZone("X", 3600)))
	if err1 != nil || err2 != nil || u1 != u2 {
		t.Fatalf("two nodes gave different upload URLs (%v, %v):\n%s\n%s", err1, err2, u1, u2)
	}
	if r := blobtest.Put(t, u2, []byte("0123456789")); r.Status != 200 {
		t.Fatalf("PUT through the other node's URL: %d %s", r.Status, r.Body)
	}
}

// TestJobIDs_PagedAndPrefixed: JobIDs pages through more than one ListObjectsV2 page (1000
// keys) and sees only keys under its prefix, JobIDsAfter lists only a turn's pages, and
// Delete leaves other prefixes alone.
func TestJobIDs_PagedAndPrefixed(t *testing.T) {
	bk := tests3.NewBucket(t, tests3.Options{})
	var lists atomic.Int32
	st, err := s3store.New(s3store.Options{
		Endpoint: bk.Endpoint, Region: bk.Region, Bucket: bk.Name, Prefix: "convsvc",
		AccessKey: bk.AccessKey, SecretKey: bk.SecretKey, PathStyle: true,
		HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Query().Get("list-type") == "2" {
				lists.Add(1)
			}
			return http.DefaultTransport.RoundTrip(r)
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	cl := bk.Client()
	put := func(key string) error {
		_, err := cl.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bk.Name), Key: aws.String(key), Body: strings.NewReader("x")})
		return err
	}
	const n = 1210 // 1089 under uploads/ (two pages of at most 1000), 121 under outputs/
	var want []string
	keys := make(chan string)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			var first error
			for k := range keys {
				if err := put(k); err != nil && first == nil {
					first = err
				}
			}
			errs <- first
		}()
	}
	for i := range n {
		id := fmt.Sprintf("job_%05d", i)
		want = append(want, id)
		if i%10 == 9 {
			keys <- "convsvc/outputs/" + id + "/1" // an output only
		} else {
			keys <- "convsvc/uploads/" + id
		}
	}
	// Not convsvc's: other prefixes, and names that are not job ids.
	for _, k := range []string{"uploads/job_noprefix", "other/uploads/job_other", "convsvc/uploads/notajob", "convsvc/outputs/job_"} {
		keys <- k
	}
	close(keys)
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ids, err := st.JobIDs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("JobIDs gave %d ids (first %v); want the %d under the prefix", len(ids), ids[:min(3, len(ids))], n)
	}
	if got := lists.Load(); got < 4 {
		t.Errorf("JobIDs made %d ListObjectsV2 requests for %d keys; want pages of at most 1000 (two of uploads/)", got, n)
	}
	// The sweep's turns (JobIDsAfter): each lists from its cursor and stops once it has its
	// ids, so a turn of 400 reads one page of each of the three folders, where JobIDs read
	// two of uploads/, and the turns together are the listing.
	var turns []string
	after := ""
	for {
		before := lists.Load()
		page, err := st.JobIDsAfter(after, 400)
		if err != nil {
			t.Fatal(err)
		}
		if got := lists.Load() - before; got != 3 {
			t.Errorf("a turn of 400 after %q made %d ListObjectsV2 requests; want 3, a page of each folder", after, got)
		}
		turns = append(turns, page...)
		if len(page) < 400 {
			break
		}
		after = page[len(page)-1]
	}
	if !slices.Equal(turns, want) {
		t.Fatalf("JobIDsAfter in turns of 400 gave %d ids; want the %d under the prefix", len(turns), n)
	}
	if err := st.Delete("job_noprefix"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bk.Name), Key: aws.String("uploads/job_noprefix")}); err != nil {
		t.Fatalf("Delete under prefix convsvc/ removed uploads/job_noprefix: %v", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSeal_LeftoverCopy: a Seal whose start fails (the job store refused, or the process died
// after the copy) leaves a copy that InputIDs lists and DeleteInput removes with the upload.
func TestSeal_LeftoverCopy(t *testing.T) {
	st, bk, _ := newStore(t, false)
	id := blobtest.NewJobID()
	blobtest.Upload(t, newS3Backend(st), id, []byte("sealed bytes"))
	refused := errors.New("start refused")
	if err := st.Seal(id, func(s3store.UploadInfo) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("Seal = %v; want start's error", err)
	}
	keys := bucketKeys(t, bk)
	if len(keys) != 2 || !strings.HasPrefix(keys[0], "convsvc/inputs/"+id+"/") || keys[1] != st.UploadKey(id) {
		t.Fatalf("after Seal the bucket holds %q; want the upload and its copy under inputs/%s/", keys, id)
	}
	if ids, err := st.InputIDs(); err != nil || !slices.Equal(ids, []string{id}) {
		t.Fatalf("InputIDs = %v, %v; want [%s]", ids, err, id)
	}
	if err := st.DeleteInput(id); err != nil {
		t.Fatal(err)
	}
	if keys := bucketKeys(t, bk); len(keys) != 0 {
		t.Fatalf("after DeleteInput the bucket holds %q", keys)
	}
}

// TestOpenInput_SealedBeforeCopies: a job whose start recorded the upload but made no copy
// (sealed by an older convsvc) reads the upload, pinned by If-Match: a replaced one is
// ErrInputChanged.
func TestOpenInput_SealedBeforeCopies(t *testing.T) {
	st, bk, _ := newStore(t, false)
	id := blobtest.NewJobID()
	data := blobtest.RandomBytes(1000)
	u, err := st.UploadURL(id, int64(len(data)), time.Now().Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if r := blobtest.Put(t, u, data); r.Status != 200 {
		t.Fatalf("PUT: %d %s", r.Status, r.Body)
	}
	h, err := bk.Client().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bk.Name), Key: aws.String(st.UploadKey(id))})
	if err != nil {
		t.Fatal(err)
	}
	info := s3store.UploadInfo{Size: int64(len(data)), ETag: aws.ToString(h.ETag)}
	f, err := st.OpenInput(id, info)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(f)
	f.Close()
	if !bytes.Equal(got, data) {
		t.Fatalf("OpenInput read %d other bytes", len(got))
	}
	if r := blobtest.Put(t, u, blobtest.RandomBytes(1000)); r.Status != 200 {
		t.Fatalf("PUT: %d %s", r.Status, r.Body)
	}
	if f, err := st.OpenInput(id, info); !errors.Is(err, s3store.ErrInputChanged) {
		if f != nil {
			f.Close()
		}
		t.Fatalf("OpenInput of a replaced upload = %v; want ErrInputChanged", err)
	}
}

// bucketKeys lists every key in the bucket, sorted.
func bucketKeys(t *testing.T, bk tests3.Bucket) []string {
	t.Helper()
	out, err := bk.Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bk.Name)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	slices.Sort(keys)
	return keys
}

// BenchmarkSeal measures a start's object-storage work for each file named in
// $CONVSVC_BENCH_SEAL_INPUTS (comma-separated): "seal" is Seal (HeadObject and the server-side
// CopyObject to the sealed key), "head" is the HeadObject alone (what a start cost before the
// copy). Without the variable it skips. docs/benchmarks.md has the command and figures.
func BenchmarkSeal(b *testing.B) {
	inputs := os.Getenv("CONVSVC_BENCH_SEAL_INPUTS")
	if inputs == "" {
		b.Skip("set CONVSVC_BENCH_SEAL_INPUTS to the files to seal")
	}
	st, bk, _ := newStore(b, false)
	for _, path := range strings.Split(inputs, ",") {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		id := blobtest.NewJobID()
		blobtest.Upload(b, newS3Backend(st), id, data)
		name := filepath.Base(path)
		b.Run(name+"/seal", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := st.Seal(id, func(s3store.UploadInfo) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/head", func(b *testing.B) {
			for b.Loop() {
				if _, err := bk.Client().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bk.Name), Key: aws.String(st.UploadKey(id))}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDeleteInput_EveryVersionOfTheJobOnly: in a versioned and an unversioned bucket,
// DeleteInput removes the upload (every version of it, and the delete marker its own delete
// made) and the sealed copy, and leaves the job's output and a job whose id extends this one's.
func TestDeleteInput_EveryVersionOfTheJobOnly(t *testing.T) {
	for _, versioned := range []bool{false, true} {
		name := map[bool]string{false: "Unversioned", true: "Versioned"}[versioned]
		t.Run(name, func(t *testing.T) {
			st, bk, _ := newStore(t, versioned)
			id := blobtest.NewJobID()
			longer := id + "2"
			for _, j := range []string{id, longer} {
				blobtest.Upload(t, newS3Backend(st), j, []byte("first"))
				blobtest.Upload(t, newS3Backend(st), j, []byte("again")) // a second version
				if err := st.Seal(j, func(s3store.UploadInfo) error { return nil }); err != nil {
					t.Fatal(err)
				}
			}
			p, err := st.CreateOutput(id, 1)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := blobtest.CommitThroughFile(p, []byte("out"), blobstore.OutputMeta{}); err != nil {
				t.Fatal(err)
			}
			if err := st.DeleteInput(id); err != nil {
				t.Fatal(err)
			}
			vs, err := bk.Client().ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(bk.Name)})
			if err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, v := range vs.Versions {
				left = append(left, aws.ToString(v.Key))
			}
			for _, v := range vs.DeleteMarkers {
				left = append(left, "marker "+aws.ToString(v.Key))
			}
			slices.Sort(left)
			want := []string{st.OutputKey(id, 1), st.UploadKey(longer)}
			if versioned {
				want = append(want, st.UploadKey(longer)) // its two versions
			}
			var copies int
			for _, k := range left {
				if strings.HasPrefix(k, "convsvc/inputs/"+longer+"/") {
					copies++
				}
			}
			got := slices.DeleteFunc(slices.Clone(left), func(k string) bool { return strings.HasPrefix(k, "convsvc/inputs/"+longer+"/") })
			slices.Sort(want)
			if !slices.Equal(got, want) || copies != 1 {
				t.Fatalf("after DeleteInput(%s) the bucket holds %q; want %q and %s's sealed copy", id, left, want, longer)
			}
		})
	}
}
