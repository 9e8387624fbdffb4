package cli_test

import (
	"bytes"
	"image/jpeg"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// TestConvert_SourceURLAndDeliverTo: convert --source-url has the embedded server fetch the
// file (the user's own process may reach loopback), names the output after the URL, and
// --deliver-to with --deliver-header PUTs the same bytes to the destination.
func TestConvert_SourceURLAndDeliverTo(t *testing.T) {
	png := testenv.Sample(t, "images/sample.png")
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(png) }))
	defer origin.Close()
	var mu sync.Mutex
	var delivered []byte
	var contentType string
	dest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		delivered, contentType = b, r.Header.Get("Content-Type")
		mu.Unlock()
	}))
	defer dest.Close()
	dir := t.TempDir()
	out, errOut, code, err := runIn(t, dir, "convert", "--source-url", origin.URL+"/pics/photo.png?token=s3cr3t", "--to", "jpeg",
		"--deliver-to", dest.URL+"/bucket/photo.jpg?X-Amz-Signature=sig", "--deliver-header", "Content-Type: image/jpeg")
	if code != 0 {
		t.Fatalf("exit %d: %v\n%s%s", code, err, out, errOut)
	}
	if strings.Contains(out, "s3cr3t") || strings.Contains(out, "X-Amz-Signature=sig") || !strings.Contains(out, "photo.jpg") {
		t.Fatalf("summary %q: want the output named and the URLs' queries hidden", out)
	}
	got, err := os.ReadFile(filepath.Join(dir, "photo.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jpeg.Decode(bytes.NewReader(got)); err != nil {
		t.Fatalf("photo.jpg: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !bytes.Equal(got, delivered) || contentType != "image/jpeg" {
		t.Fatalf("delivered %d bytes (%q), downloaded %d", len(delivered), contentType, len(got))
	}
}

// TestConvert_SourceURLRefusals: --source-url with INPUTs, a non-http URL, or --deliver-header
// without --deliver-to are refused before any job.
func TestConvert_SourceURLRefusals(t *testing.T) {
	dir := workdir(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"convert", "sample.png", "--source-url", "https://example.com/a.png", "--to", "jpeg"}, "drop the INPUT"},
		{[]string{"convert", "--source-url", "ftp://example.com/a.png", "--to", "jpeg"}, "http or https"},
		{[]string{"convert", "sample.png", "--to", "jpeg", "--deliver-header", "A: b"}, "--deliver-header needs --deliver-to"},
	} {
		_, _, code, err := runIn(t, dir, tc.args...)
		if code == 0 || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: exit %d, %v; want an error naming %q", tc.args, code, err, tc.want)
		}
	}
}
