package service_test

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"strings"
	"testing"
	"time"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/httpapi"
	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/internal/testing/testpdf"
	"github.com/convsvc/convsvc/service"
)

// TestProgress_ConvertersCount: a 16-page PDF rendered to a zip of PNGs, a zip of 600
// entries repacked as tar, and an 800x600 JPEG made a GIF report several growing values
// strictly between 0 and 1 on their job's stream: the pages and entries done, the image's
// input bytes decoded then its rows dithered, not the input's offset (PDFium and the zip
// reader read the input's end first, so the offset said 0.99 at once; the image's decode
// reached it before the encode began). The conversions run
// in worker processes, so the counts cross the worker socket; on bbolt, and the PDF again
// on PostgreSQL.
func TestProgress_ConvertersCount(t *testing.T) {
	// 3 ms: the fastest conversion here (zip -> tar, 87-168 ms on a quiet 2-core machine) spans
	// dozens of samples, so a faster machine still shows at least three values.
	fast := func(c *service.Config) { c.ProgressInterval = 3 * time.Millisecond; c.Workers = 1 }
	pdf, archive, photo := manyPagePDF(16), manyEntryZip(t, 600), photoJPEG(t, 800, 600)
	t.Run("bbolt", func(t *testing.T) {
		e := testenv.Start(t, fast, processIsolation)
		checkCounted(t, e, "pdf", "zip", pdf)
		checkCounted(t, e, "zip", "tar", archive)
		checkCounted(t, e, "jpeg", "gif", photo)
	})
	t.Run("postgres", func(t *testing.T) {
		if testing.Short() {
			t.Skip("PostgreSQL")
		}
		e := testenv.Start(t, testenv.Postgres(t), fast)
		checkCounted(t, e, "pdf", "zip", pdf)
	})
}

// checkCounted converts data from -> to, following the job's stream from before it starts,
// and fails unless the stream shows at least three growing progress values in (0, 1).
func checkCounted(t *testing.T, e *testenv.Env, from, to string, data []byte) {
	t.Helper()
	began := time.Now()
	res := e.Create(e.Key, from, to, int64(len(data)))
	testenv.MustStatus(t, e.Upload(res.UploadURL, data), 200, "")
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Scale(2*time.Minute))
	defer cancel()
	api := e.Main.Handler().(*httpapi.Server)
	before := api.Streams()
	type result struct {
		values []float64
		final  string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		c := &client.Client{BaseURL: e.URL, Key: e.Key}
		for ev, err := range c.JobEvents(ctx, res.Job.ID, client.EventsOptions{Reconnects: -1}) {
			if err != nil {
				r.err = err
				break
			}
			if ev.Type == client.EventJobProgress && ev.Job != nil && ev.Job.Progress != nil {
				r.values = append(r.values, *ev.Job.Progress)
			}
			r.final = ev.Type
		}
		done <- r
	}()
	for api.Streams() == before { // the stream is open before the job starts
		if ctx.Err() != nil {
			t.Fatal("the job's stream never opened")
		}
		time.Sleep(5 * time.Millisecond)
	}
	testenv.MustStatus(t, e.Start(e.Key, res.Job.ID), 200, "")
	r := <-done
	if r.err != nil || r.final != client.EventJobSucceeded {
		t.Fatalf("%s -> %s: stream ended with %q, %v; want job.succeeded", from, to, r.final, r.err)
	}
	t.Logf("%s -> %s progress: %v (job and stream in %v)", from, to, r.values, time.Since(began))
	inside := 0
	for i, v := range r.values {
		if v < 0 || v >= 1 || i > 0 && v <= r.values[i-1] {
			t.Fatalf("%s -> %s progress %v: want values growing, below 1", from, to, r.values)
		}
		if v > 0 {
			inside++
		}
	}
	if inside < 3 {
		t.Fatalf("%s -> %s progress %v: want at least 3 values between 0 and 1", from, to, r.values)
	}
}

// manyPagePDF is a PDF of n letter pages, each filled with coloured bands.
func manyPagePDF(n int) []byte {
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", ""}
	var kids []string
	for i := range n {
		var content strings.Builder
		for k := range 60 {
			fmt.Fprintf(&content, "%.2f %.2f %.2f rg %d %d 600 13 re f\n", float64((i+k)%7)/7, float64(k%5)/5, float64(k%3)/3, 6, k*13)
		}
		kids = append(kids, fmt.Sprintf("%d 0 R", len(objs)+1))
		objs = append(objs, fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R >>", len(objs)+2),
			testpdf.Stream(content.String()))
	}
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n)
	return testpdf.PDF(objs...)
}

// photoJPEG is a w x h JPEG of smooth gradients with fine texture, photo-like enough that
// the GIF encoder quantizes and dithers it.
func photoJPEG(t *testing.T, w, h int) []byte {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			i := m.PixOffset(x, y)
			n := uint8((x*7+y*13)^(x*y)) & 15
			m.Pix[i], m.Pix[i+1], m.Pix[i+2], m.Pix[i+3] = uint8(x*255/w)+n, uint8(y*255/h)+n, uint8((x+y)*255/(w+h))^n, 255
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// manyEntryZip is a zip of n text entries of 32 KiB each.
func manyEntryZip(t *testing.T, n int) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for i := range n {
		w, err := zw.Create(fmt.Sprintf("dir%02d/entry-%05d.txt", i%20, i))
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 32<<10; k += 32 {
			fmt.Fprintf(w, "entry %05d line %06d of text.\n", i, k/32)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
