package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
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
	held := testenv.HoldConnections(t, blobAddr, "/uploads/job_x", perAddr)
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

// TestConvert_FileWhoseExtensionLies: a JPEG named photo.png is converted as the JPEG it is,
// with a notice on stderr naming both, and the job says jpeg; before, the CLI trusted the
// extension, reserved a png job, uploaded, and the job failed ("not a valid PNG file").
func TestConvert_FileWhoseExtensionLies(t *testing.T) {
	e := testenv.Start(t)
	t.Setenv("CONVSVC_URL", e.URL)
	t.Setenv("CONVSVC_KEY", e.Key)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "photo.png"), testenv.Sample(t, "images/sample.jpeg"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code, err := runIn(t, dir, "convert", "photo.png", "--to", "gif")
	if err != nil || code != 0 || !strings.HasPrefix(out, "photo.png -> photo.gif (") {
		t.Fatalf("exit %d, %v, stdout %q, stderr %q", code, err, out, errOut)
	}
	want := "convsvc: photo.png holds a JPEG image, not a PNG image as its extension says: converting it as jpeg (pass --from to choose)\n"
	if errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	jobs := jobsOf(t, e)
	if len(jobs) != 1 || jobs[0].InputFormat != "jpeg" || jobs[0].Status != "succeeded" {
		t.Fatalf("jobs %+v, want one succeeded jpeg job", jobs)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "photo.gif")); !bytes.HasPrefix(b, []byte("GIF8")) {
		t.Fatal("no GIF written")
	}
	// Files whose extension tells the truth, or whose signature cannot tell (a DOCX is a ZIP,
	// Markdown is text), get no notice.
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("<html> is how it starts\n\n# Notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "letter.docx"), testenv.Sample(t, "documents/sample.docx"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"notes.md", "letter.docx"} {
		_, errOut, code, err := runIn(t, dir, "convert", in, "--to", "txt")
		if err != nil || code != 0 || errOut != "" {
			t.Errorf("convert %s: exit %d, %v, stderr %q", in, code, err, errOut)
		}
	}
}

// TestConvert_OutputExtensionMustMatchTheTarget: -o out.png --to jpeg is refused before any job
// (it wrote JPEG bytes under .png without a word); an extension of the target, none, or one no
// format claims is taken as given.
func TestConvert_OutputExtensionMustMatchTheTarget(t *testing.T) {
	e := testenv.Start(t)
	t.Setenv("CONVSVC_URL", e.URL)
	t.Setenv("CONVSVC_KEY", e.Key)
	dir := workdir(t)
	_, _, code, err := runIn(t, dir, "convert", "sample.png", "--to", "jpeg", "-o", "out.png")
	want := "-o out.png: .png is the extension of PNG image, but --to jpeg writes JPEG image; name the output out.jpg, or pass --to png"
	if code != 1 || err == nil || err.Error() != want {
		t.Fatalf("exit %d, error %v; want %q", code, err, want)
	}
	if jobs := jobsOf(t, e); len(jobs) != 0 {
		t.Fatalf("%d jobs reserved for a refused output", len(jobs))
	}
	for _, name := range []string{"out.jpeg", "out.jpe", "out", "out.data"} {
		if _, errOut, code, err := runIn(t, dir, "convert", "sample.png", "--to", "jpeg", "-o", name); err != nil || code != 0 {
			t.Errorf("-o %s: exit %d, %v, stderr %q", name, code, err, errOut)
		}
	}
}
