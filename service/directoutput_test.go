package service_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
	"github.com/convsvc/convsvc/worker"
)

// localBlobs skips a test of the local blob store's files when the suite runs on S3
// (CONVSVC_TEST_OBJECT_STORAGE), whose outputs are not written by the workers in place.
func localBlobs(t *testing.T, e *testenv.Env) {
	t.Helper()
	if e.Bucket != nil {
		t.Skip("checks the local blob store's files; object storage is S3 here")
	}
}

// noisyPNG is a w x h PNG of random pixels: slow to encode in any lossy format.
func noisyPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(3, 4))
	for i := range img.Pix {
		img.Pix[i] = byte(r.Uint32())
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// blobFiles lists the files under the data dir's blobs/DIR.
func blobFiles(t *testing.T, e *testenv.Env, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(e.Cfg.DataDir, "blobs", dir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, en := range entries {
		names = append(names, en.Name())
	}
	return names
}

// With --isolation process the worker writes the output straight into the pending output's
// file in the blob store (worker.DirectOutput): the job's output is what the worker wrote,
// its recorded SHA-256 that of the bytes served; a conversion that fails after writing part
// of its output, or is cancelled while writing, leaves no output and nothing in blobs/tmp.
func TestIsolation_OutputWrittenInPlace(t *testing.T) {
	if !worker.Supported() {
		t.Skip("worker processes run on Linux only")
	}
	e := testenv.Start(t, processIsolation, func(c *service.Config) { c.MaxOutputBytes = 1 << 20 })
	localBlobs(t, e)

	data := testenv.Sample(t, "images/sample.png")
	j := e.Convert(e.Key, "png", "jpeg", data)
	if j.Status != "succeeded" || j.Output == nil {
		t.Fatalf("job %s: %s", j.Status, j.Error())
	}
	wantJPEGOutput(t, j)

	// Past the output limit: the worker wrote 1 MiB into the output's file, then failed.
	failed := e.Convert(e.Key, "json", "csv", overOneMiBCSV())
	if failed.Status != "failed" || failed.ErrorMessage == nil || !strings.Contains(*failed.ErrorMessage, "output size limit") {
		t.Fatalf("over the limit: %s %s", failed.Status, failed.Error())
	}
	if outs := blobFiles(t, e, "outputs"); len(outs) != 1 || outs[0] != j.ID {
		t.Fatalf("blobs/outputs holds %q, want only the succeeded job's output %s", outs, j.ID)
	}
	if tmp := blobFiles(t, e, "tmp"); len(tmp) != 0 {
		t.Fatalf("blobs/tmp holds %q after a failed conversion, want nothing", tmp)
	}
}

// wantJPEGOutput downloads the succeeded job's output and fails t unless it is a JPEG of the
// recorded size and SHA-256.
func wantJPEGOutput(t *testing.T, j testenv.Job) {
	t.Helper()
	resp, err := http.Get(j.Output.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("download: %d %v", resp.StatusCode, err)
	}
	sum := sha256.Sum256(got)
	if !bytes.HasPrefix(got, []byte{0xff, 0xd8, 0xff}) || int64(len(got)) != j.Output.Bytes || hex.EncodeToString(sum[:]) != j.Output.SHA256 {
		t.Fatalf("downloaded %d bytes (sha256 %x), job says %d bytes, %s", len(got), sum, j.Output.Bytes, j.Output.SHA256)
	}
}

// overOneMiBCSV is JSON whose CSV is about 2.2 MB: 1,500 rows, each with a key of its own,
// pad to 1,500 columns.
func overOneMiBCSV() []byte {
	var b strings.Builder
	b.WriteString("[")
	for i := range 1500 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"k` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strconv.Itoa(i) + `":1}`)
	}
	b.WriteString("]")
	return []byte(b.String())
}

// The same on S3: the worker writes into the S3 output's scratch file, which Commit uploads;
// the object is the worker's bytes with the recorded SHA-256, and a conversion stopped at the
// output limit stores no object.
func TestIsolation_OutputWrittenInPlaceS3(t *testing.T) {
	if !worker.Supported() {
		t.Skip("worker processes run on Linux only")
	}
	e := testenv.Start(t, processIsolation, testenv.S3(t), func(c *service.Config) { c.MaxOutputBytes = 1 << 20 })
	j := e.Convert(e.Key, "png", "jpeg", testenv.Sample(t, "images/sample.png"))
	if j.Status != "succeeded" || j.Output == nil {
		t.Fatalf("job %s: %s", j.Status, j.Error())
	}
	wantJPEGOutput(t, j)
	failed := e.Convert(e.Key, "json", "csv", overOneMiBCSV())
	if failed.Status != "failed" || failed.ErrorMessage == nil || !strings.Contains(*failed.ErrorMessage, "output size limit") {
		t.Fatalf("over the limit: %s %s", failed.Status, failed.Error())
	}
	for _, k := range e.ObjectKeys() {
		if strings.Contains(k, "outputs/"+failed.ID) {
			t.Fatalf("object %s stored for the failed job", k)
		}
	}
}

// A job cancelled while its worker converts (the output's file handed to it): the worker is
// killed, the output's file is removed, and no output appears.
func TestIsolation_CancelledLeavesNoOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes a large AVIF until cancelled")
	}
	if !worker.Supported() {
		t.Skip("worker processes run on Linux only")
	}
	e := testenv.Start(t, processIsolation, func(c *service.Config) { c.Workers = 1 })
	localBlobs(t, e)
	data := testenv.Sample(t, "images/sample.png")
	big := noisyPNG(t, 2500, 2500)
	res := e.Create(e.Key, "png", "avif", int64(len(big)))
	testenv.MustStatus(t, e.Upload(res.UploadURL, big), 200, "")
	testenv.MustStatus(t, e.Start(e.Key, res.Job.ID), 200, "")
	for deadline := time.Now().Add(time.Minute); ; {
		if j := e.Get(e.Key, res.Job.ID, 0); j.Status == "running" {
			break
		} else if j.Finished() || time.Now().After(deadline) {
			t.Fatalf("job %s before it could be cancelled running", j.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	testenv.MustStatus(t, e.Do("POST", "/v1/jobs/"+res.Job.ID+"/cancel", e.Key, nil), 200, "")
	if j := e.WaitFinished(e.Key, res.Job.ID); j.Status != "cancelled" {
		t.Fatalf("job %s, want cancelled", j.Status)
	}
	// The worker is killed and the pool discards the output before the slot is free: a
	// second job through the same single slot proves the first one's cleanup ran.
	if j := e.Convert(e.Key, "png", "jpeg", data); j.Status != "succeeded" {
		t.Fatalf("next job %s: %s", j.Status, j.Error())
	}
	for _, name := range blobFiles(t, e, "outputs") {
		if strings.HasPrefix(name, res.Job.ID) {
			t.Fatalf("blobs/outputs holds %s of the cancelled job", name)
		}
	}
	if tmp := blobFiles(t, e, "tmp"); len(tmp) != 0 {
		t.Fatalf("blobs/tmp holds %q after the cancel, want nothing", tmp)
	}
}
