package cli_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testenv"
	"github.com/convsvc/convsvc/service"
)

// TestConvert_RetriesAnUploadRefusedByTheConnectionCap: the storage listener's connection cap
// answers convert's upload 503 too_many_connections (before reading it); convert sends the
// file again after the Retry-After and the conversion succeeds. Before, the file was handed to
// the client wrapped in a progress reader that could not be read again, so the 503 failed the
// file (and a bare *os.File was closed by net/http with the first attempt).
func TestConvert_RetriesAnUploadRefusedByTheConnectionCap(t *testing.T) {
	testenv.LocalBlobsOnly(t, "the local storage listener's connection cap")
	const perAddr = 4
	e := testenv.Start(t, func(c *service.Config) { c.MaxConnectionsPerAddress = perAddr })
	blobAddr := strings.TrimPrefix(e.Main.BlobURL(), "http://")
	var held []net.Conn
	for range perAddr {
		conn, err := net.Dial("tcp", blobAddr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		io.WriteString(conn, "GET /uploads/job_x HTTP/1.1\r\nHost: storage\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable || resp.Close {
			t.Fatalf("held connection refused or closed: %d", resp.StatusCode)
		}
		held = append(held, conn)
	}
	// Once the storage listener has refused a connection (convert's upload), give the places
	// back, so that the retry gets in.
	refused := make(chan float64, 1)
	stop, done := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-done }()
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if n := e.Scrape().Value("convsvc_connections_refused_total", "listener", "storage"); n > 0 {
				for _, conn := range held {
					conn.Close()
				}
				refused <- n
				return
			}
		}
	}()
	t.Setenv("CONVSVC_URL", e.URL)
	t.Setenv("CONVSVC_KEY", e.Key)
	dir := workdir(t)
	out, errOut, code, err := runIn(t, dir, "convert", "sample.png", "--to", "jpeg")
	if err != nil || code != 0 || !strings.HasPrefix(out, "sample.png -> sample.jpg (") {
		t.Fatalf("exit %d, %v, stdout %q, stderr %q", code, err, out, errOut)
	}
	select {
	case <-refused:
	default:
		t.Fatal("the storage listener refused no connection: the upload was never answered 503")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sample.jpg")); !bytes.HasPrefix(b, []byte{0xFF, 0xD8}) {
		t.Fatal("no JPEG written")
	}
}
