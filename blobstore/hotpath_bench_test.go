package blobstore

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Small-object hot paths: every job signs an upload URL, verifies it on PUT, stores a small
// body (most inputs are far below the 64 MiB of BenchmarkPutUpload) and is sealed at start.

func BenchmarkUploadURL(b *testing.B) {
	e := newTestEnv(b)
	exp := e.expires()
	b.ReportAllocs()
	for b.Loop() {
		_ = e.st.UploadURL("job_bench", 123456, exp)
	}
}

func BenchmarkVerifyURL(b *testing.B) {
	e := newTestEnv(b)
	u, err := url.Parse(e.uploadURL("job_bench", 123456))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.st.verifyURL("PUT", u.Path, u.RawQuery); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutSmall PUTs 16 KiB bodies to fresh ids: the per-upload fixed cost (temp file,
// fsync, rename, directory fsync) rather than the copy.
func BenchmarkPutSmall(b *testing.B) {
	const size = 16 << 10
	e := newTestEnv(b)
	body := bytes.Repeat([]byte{0x5a}, size)
	exp := time.Unix(0, e.now.Load()).Add(24 * time.Hour)
	b.SetBytes(size)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		resp := e.do("PUT", e.st.UploadURL(fmt.Sprintf("job_small%d", i), size, exp), bytes.NewReader(body), size, nil)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status = %d", resp.StatusCode)
		}
	}
}

// BenchmarkSeal is what start does to the upload: a stat under the id lock (the job store's
// start commit, which runs inside it, is not part of this).
func BenchmarkSeal(b *testing.B) {
	e := newTestEnv(b)
	exp := time.Unix(0, e.now.Load()).Add(24 * time.Hour)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprintf("job_seal%d", i)
		b.StopTimer()
		resp := e.do("PUT", e.st.UploadURL(id, 3, exp), bytes.NewReader([]byte("abc")), 3, nil)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status = %d", resp.StatusCode)
		}
		b.StartTimer()
		if _, err := e.seal(id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteOutputSmall commits a 1 KiB output to fresh ids, with its metadata in an
// extended attribute (Linux) and in a sidecar file: the fixed cost of a small conversion's
// output (files, fsyncs, renames).
func BenchmarkWriteOutputSmall(b *testing.B) {
	body := bytes.Repeat([]byte{0x5a}, 1<<10)
	meta := OutputMeta{ContentType: "image/jpeg", Filename: "out.jpg"}
	for _, attrs := range []bool{true, false} {
		name := map[bool]string{true: "attribute", false: "sidecar"}[attrs]
		b.Run(name, func(b *testing.B) {
			e := newTestEnv(b)
			e.st.metaAttrs = attrs
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if _, err := e.st.WriteOutput(fmt.Sprintf("job_out%d", i), meta, func(w io.Writer) error {
					_, err := w.Write(body)
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDeleteInput is what every finished job does to its upload (the input cleaner): the
// upload's removal under the id lock, in a directory of 10,000 other uploads.
func BenchmarkDeleteInput(b *testing.B) {
	e := newTestEnv(b)
	for i := range 10000 {
		if err := os.WriteFile(filepath.Join(e.dir, "uploads", fmt.Sprintf("job_other%d", i)), []byte("abc"), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprintf("job_del%d", i)
		b.StopTimer()
		if err := os.WriteFile(filepath.Join(e.dir, "uploads", id), []byte("abc"), 0o600); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := e.st.DeleteInput(id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUploadSHA256 is what a start with the cache on reads after Seal: the hash the
// upload's PUT recorded in the file's extended attribute.
func BenchmarkUploadSHA256(b *testing.B) {
	e := newTestEnv(b)
	exp := time.Unix(0, e.now.Load()).Add(24 * time.Hour)
	resp := e.do("PUT", e.st.UploadURL("job_sum", 3, exp), bytes.NewReader([]byte("abc")), 3, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("status = %d", resp.StatusCode)
	}
	b.ReportAllocs()
	for b.Loop() {
		if sum, err := e.st.UploadSHA256("job_sum"); err != nil || len(sum) != 64 {
			b.Fatal(sum, err)
		}
	}
}
