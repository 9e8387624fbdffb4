package blobstore

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// smallSendBuffer accepts connections with a 32 KiB send buffer, so a download that is not
// read fills it quickly and the handler's writes block, as they do on a real slow link.
type smallSendBuffer struct{ net.Listener }

func (l smallSendBuffer) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(32 << 10)
	}
	return c, err
}

// progressServer serves e's store with the given progress timeout and reports each
// handler's return on the channel.
func progressServer(t *testing.T, e *testEnv, timeout time.Duration) (*httptest.Server, <-chan struct{}) {
	t.Helper()
	h := e.st.HandlerWith(HandlerConfig{ProgressTimeout: timeout})
	done := make(chan struct{}, 16)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		h.ServeHTTP(w, r)
	}))
	srv.Listener = smallSendBuffer{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, done
}

// onServer rewrites a URL signed for e's server to srv (the signature covers only the path
// and query).
func onServer(e *testEnv, srv *httptest.Server, url string) string {
	return srv.URL + strings.TrimPrefix(url, strings.TrimSuffix(e.cfg.PublicURL, "/"))
}

// TestHandler_Put_StalledUploadIsCut: an upload that sent 100 of 1,000,000 bytes and then
// nothing is cut after the progress timeout with 408 transfer_stalled; its temporary file is
// gone (testEnv's cleanup asserts tmp/ is empty) and a retry of the same URL is stored.
// Before, the stalled PUT held the URL (409 upload_in_progress) for as long as it stalled.
func TestHandler_Put_StalledUploadIsCut(t *testing.T) {
	e := newTestEnv(t)
	srv, _ := progressServer(t, e, time.Second)
	const size = 1_000_000
	url := onServer(e, srv, e.uploadURL("job_stall", size))
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", strings.TrimPrefix(url, srv.URL), size)
	conn.Write(bytes.Repeat([]byte("a"), 100))
	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled upload within 60 s: %v", err)
	}
	wantError(t, resp, http.StatusRequestTimeout, "transfer_stalled")
	if !resp.Close {
		t.Error("the stalled upload's connection stays open")
	}

	body := strings.Repeat("b", size)
	r, err := http.NewRequest("PUT", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	retry, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, retry.Body)
	retry.Body.Close()
	if retry.StatusCode != http.StatusOK {
		t.Fatalf("retry after a stalled upload: status %d", retry.StatusCode)
	}
}

// pacedReader yields size bytes in pieces of piece bytes, one every pause: a slow but live
// client.
type pacedReader struct {
	left, piece int
	pause       time.Duration
}

func (p *pacedReader) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	time.Sleep(p.pause)
	n := min(len(b), p.piece, p.left)
	for i := range b[:n] {
		b[i] = 'c'
	}
	p.left -= n
	return n, nil
}

// TestHandler_Put_SlowLiveUploadCompletes: an upload that keeps moving (32 KiB every 200 ms,
// five times the 64 KiB per 2 s the check asks) completes although it lasts three progress
// timeouts: the timeout bounds a stall, not a transfer.
func TestHandler_Put_SlowLiveUploadCompletes(t *testing.T) {
	e := newTestEnv(t)
	srv, _ := progressServer(t, e, 2*time.Second)
	const size = 1 << 20
	url := onServer(e, srv, e.uploadURL("job_slow", size))
	r, err := http.NewRequest("PUT", url, &pacedReader{left: size, piece: 32 << 10, pause: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r.ContentLength = size
	start := time.Now()
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("slow live upload: status %d: %s", resp.StatusCode, b)
	}
	if d := time.Since(start); d < 4*time.Second {
		t.Fatalf("the upload took %s, not the several progress timeouts the test means", d)
	}
}

// TestHandler_Get_StalledDownloadIsCut: a download whose reader stops is cut after the
// progress timeout: the handler returns and the connection closes before the whole file was
// sent. Before, the handler sat in its write for as long as the client kept the connection.
func TestHandler_Get_StalledDownloadIsCut(t *testing.T) {
	e := newTestEnv(t)
	srv, done := progressServer(t, e, time.Second)
	const size = 8 << 20
	e.mustWriteOutput("job_dl", strings.Repeat("d", size), OutputMeta{ContentType: "text/plain", Filename: "job_dl.txt"})
	url := onServer(e, srv, e.downloadURL("job_dl", size))
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", strings.TrimPrefix(url, srv.URL))
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the handler of a stalled download did not return within 60 s")
	}
	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	n, _ := io.Copy(io.Discard, conn)
	if n >= size {
		t.Fatalf("read %d bytes after the stall, the whole file: the download was not cut", n)
	}
}

// TestHandler_Get_SlowLiveDownloadCompletes: a reader that keeps reading (64 KiB every
// 100 ms) gets the whole file, over several progress timeouts.
func TestHandler_Get_SlowLiveDownloadCompletes(t *testing.T) {
	e := newTestEnv(t)
	srv, _ := progressServer(t, e, time.Second)
	const size = 3 << 20
	e.mustWriteOutput("job_dl2", strings.Repeat("e", size), OutputMeta{ContentType: "text/plain", Filename: "job_dl2.txt"})
	resp, err := http.Get(onServer(e, srv, e.downloadURL("job_dl2", size)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var n int64
	buf := make([]byte, 64<<10)
	for {
		time.Sleep(100 * time.Millisecond)
		k, err := io.ReadFull(resp.Body, buf)
		n += int64(k)
		if err != nil {
			break
		}
	}
	if resp.StatusCode != http.StatusOK || n != size {
		t.Fatalf("slow live download: status %d, %d of %d bytes", resp.StatusCode, n, size)
	}
}
