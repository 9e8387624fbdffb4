package blobstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"path/filepath"
	"strconv"
	"testing"
)

// Sizes around the chunk boundaries, past chunkCount chunks (buffers are
// reused) and past writebackEvery, through every way of writing.
func TestStore_WriteOutput_Chunks(t *testing.T) {
	e := newTestEnv(t)
	sizes := []int64{0, 1, chunkSize - 1, chunkSize, chunkSize + 1, chunkCount*chunkSize + 3, writebackEvery + chunkSize/2 + 7}
	ways := map[string]func(w io.Writer, data []byte) error{
		"Write 1000": func(w io.Writer, data []byte) error {
			for len(data) > 0 {
				n := min(1000, len(data))
				if _, err := w.Write(data[:n]); err != nil {
					return err
				}
				data = data[n:]
			}
			return nil
		},
		"Write whole": func(w io.Writer, data []byte) error { _, err := w.Write(data); return err },
		"io.Copy": func(w io.Writer, data []byte) error {
			_, err := io.Copy(w, io.LimitReader(bytes.NewReader(data), int64(len(data)))) // no WriterTo
			return err
		},
		"WriteString": func(w io.Writer, data []byte) error {
			_, err := io.WriteString(w, string(data))
			return err
		},
		"WriteByte": func(w io.Writer, data []byte) error {
			bw := w.(io.ByteWriter)
			for _, c := range data[:min(len(data), 5000)] {
				if err := bw.WriteByte(c); err != nil {
					return err
				}
			}
			if len(data) > 5000 {
				_, err := w.Write(data[5000:])
				return err
			}
			return nil
		},
	}
	for _, size := range sizes {
		data := make([]byte, size)
		io.ReadFull(&patternReader{n: size}, data)
		sum := sha256.Sum256(data)
		for name, write := range ways {
			id := "job_" + strconv.FormatInt(size, 10)
			out, err := e.st.WriteOutput(id, OutputMeta{}, func(w io.Writer) error { return write(w, data) })
			if err != nil {
				t.Fatalf("%d bytes, %s: %v", size, name, err)
			}
			if out.Bytes != size || out.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("%d bytes, %s: got %+v", size, name, out)
			}
			if got := readFile(t, filepath.Join(e.dir, "outputs", id)); got != string(data) {
				t.Errorf("%d bytes, %s: stored file differs", size, name)
			}
		}
	}
}

// A PUT of several chunks answers the body's length and hash and stores it.
func TestHandler_Put_Chunks(t *testing.T) {
	e := newTestEnv(t)
	const size = 3*chunkSize + 12345
	data := make([]byte, size)
	io.ReadFull(&patternReader{n: size}, data)
	resp := e.do("PUT", e.uploadURL("job_abc", size), bytes.NewReader(data), size, nil)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	sum := sha256.Sum256(data)
	want := `{"bytes":` + strconv.Itoa(size) + `,"sha256":"` + hex.EncodeToString(sum[:]) + `"}` + "\n"
	if resp.StatusCode != 200 || string(body) != want || resp.Header.Get("ETag") != `"`+hex.EncodeToString(sum[:])+`"` {
		t.Fatalf("status %d, ETag %s, body %s; want %s", resp.StatusCode, resp.Header.Get("ETag"), body, want)
	}
	if got := readFile(t, filepath.Join(e.dir, "uploads", "job_abc")); got != string(data) {
		t.Error("stored file differs from the body")
	}
}

// A disk that fails in the middle of a blob is reported as such, and discard
// stops the hashing goroutine and returns the chunks (the test would hang or
// leak otherwise).
func TestTempBlob_WriteFails(t *testing.T) {
	e := newTestEnv(t)
	tb, err := e.st.createTemp("out-job_abc")
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte{1}, chunkSize)
	for range chunkCount + 1 { // starts the hashing goroutine and reuses chunks
		if _, err := tb.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	tb.f.Close() // the next file write fails
	var werr error
	for range 2 {
		if _, werr = tb.Write(chunk); werr != nil {
			break
		}
	}
	if werr == nil || tb.err == nil {
		t.Fatalf("Write after the file failed = %v (tb.err %v), want an error", werr, tb.err)
	}
	if err := tb.finish(true); err == nil || !errors.Is(err, tb.err) {
		t.Errorf("finish = %v, want the write error", err)
	}
	tb.discard()
	tb.discard() // idempotent
}
