package web_test

import (
	"archive/zip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// TestBrowser_Batch: two files picked together are converted by "Convert all" as one batch
// (an unknown preset on one refuses the whole batch with the API's message, reserving nothing;
// then POST /v1/batches with each file's body, options included, the uploads, one start, the
// batch followed to finished); each file shows its result, and "Download all (zip)" saves the
// batch's archive, whose entries are manifest.json and both outputs with the jobs' sha256.
func TestBrowser_Batch(t *testing.T) {
	e, ctx, downloads := openPage(t)
	dir := t.TempDir()
	var files []string
	for _, c := range []struct{ name, sample string }{{"a.png", "images/sample.png"}, {"b.png", "images/sample-alpha.png"}} {
		f := filepath.Join(dir, c.name)
		if err := os.WriteFile(f, testenv.Sample(t, c.sample), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if got := eval[bool](t, ctx, `document.querySelector("#batch").hidden`); !got {
		t.Error("the batch controls show with no file")
	}
	eval[chromedp.Void](t, ctx, `window.__csp = []; document.addEventListener("securitypolicyviolation", (ev) => window.__csp.push(ev.violatedDirective + " " + ev.blockedURI)); undefined`)
	within(t, ctx, time.Minute, "pick the files", chromedp.SetUploadFiles("#files", files))
	for _, n := range []string{"1", "2"} {
		waitFor(t, ctx, "png to jpeg's options of item "+n, `document.querySelector("#item-`+n+` .options").dataset.for === "png>jpeg"`)
	}
	if got := eval[string](t, ctx, `(() => { const b = document.querySelector("#convert-all"); return (document.querySelector("#batch").hidden ? "hidden:" : "") + b.textContent + (b.disabled ? ":disabled" : ""); })()`); got != "Convert all 2 files as one batch" {
		t.Errorf("the batch button: %q", got)
	}
	// One bad item refuses the whole batch: the API's message names it, nothing is reserved.
	within(t, ctx, time.Minute, "convert all with an unknown preset", chromedp.SendKeys("#item-2-preset", "nope"), chromedp.Click("#convert-all"))
	waitFor(t, ctx, "the refused batch's error", `document.querySelector("#batch-error").textContent.includes("jobs[1]")`)
	var none struct{ Data []testenv.Job }
	e.Do("GET", "/v1/jobs", e.Key, nil).JSON(t, &none)
	if len(none.Data) != 0 || e.Account(e.AccountID)["reserved_cents"].(float64) != 0 {
		t.Fatalf("a refused batch left jobs %+v or a reservation", none.Data)
	}
	if got := eval[string](t, ctx, `document.querySelector("#item-1 .state").textContent + "|" + document.querySelector("#convert-all").disabled`); got != "|false" {
		t.Errorf("after the refused batch (item 1's state|button disabled): %q", got)
	}
	eval[chromedp.Void](t, ctx, `(() => { const p = document.querySelector("#item-2-preset"); p.value = ""; p.dispatchEvent(new Event("input")); })()`)

	within(t, ctx, time.Minute, "convert all", chromedp.SendKeys("#item-2-opt-quality", "70"), chromedp.Click("#convert-all"))
	waitFor(t, ctx, "both results and the zip link", `!document.querySelector("#item-1 .result").hidden && !document.querySelector("#item-2 .result").hidden && !document.querySelector("#download-all").hidden`)

	id := eval[string](t, ctx, `document.querySelector("#batch").dataset.batchId`)
	var batch struct {
		ID     string         `json:"id"`
		Status string         `json:"status"`
		Total  int            `json:"total"`
		Counts map[string]int `json:"counts"`
		JobIDs []string       `json:"job_ids"`
	}
	r := e.Do("GET", "/v1/batches/"+id, e.Key, nil)
	testenv.MustStatus(t, r, 200, "")
	r.JSON(t, &batch)
	if batch.Status != "finished" || batch.Total != 2 || batch.Counts["succeeded"] != 2 || len(batch.JobIDs) != 2 {
		t.Fatalf("the batch: %s", r.Body)
	}
	var jobs []testenv.Job
	for i, jid := range batch.JobIDs {
		var raw map[string]any
		jr := e.Do("GET", "/v1/jobs/"+jid, e.Key, nil)
		jr.JSON(t, &raw)
		var j testenv.Job
		jr.JSON(t, &j)
		jobs = append(jobs, j)
		opts, _ := raw["options"].(map[string]any)
		if j.Status != "succeeded" || j.TargetFormat != "jpeg" || (i == 1) != (opts["quality"] == 70.0) {
			t.Errorf("job %d: %s", i, jr.Body)
		}
		if got := eval[string](t, ctx, `document.querySelector("#item-`+string(rune('1'+i))+` .download").textContent`); !strings.HasPrefix(got, "Download "+string(rune('a'+i))+".jpg") {
			t.Errorf("item %d's link %q", i+1, got)
		}
	}
	if got := eval[string](t, ctx, `document.querySelector("#batch-state").textContent`); got != "Batch done: 2 of 2 converted." {
		t.Errorf("the batch's state %q", got)
	}

	// Download all: the page fetches the archive with the key and saves it as <batch id>.zip.
	within(t, ctx, time.Minute, "download all", chromedp.Click("#download-all"))
	saved := filepath.Join(downloads, id+".zip")
	deadline := time.Now().Add(2 * time.Minute)
	var zr *zip.ReadCloser
	for {
		var err error
		if zr, err = zip.OpenReader(saved); err == nil {
			break
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(downloads)
			t.Fatalf("no readable %s after 2 minutes: %v (dir: %v)", saved, err, entries)
		}
		time.Sleep(100 * time.Millisecond)
	}
	defer zr.Close()
	var names []string
	var manifest struct {
		BatchID string `json:"batch_id"`
		Items   []struct {
			JobID  string `json:"job_id"`
			Status string `json:"status"`
			File   string `json:"file"`
			SHA256 string `json:"sha256"`
		} `json:"items"`
	}
	for _, f := range zr.File {
		names = append(names, f.Name)
		if f.Name != "manifest.json" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || json.Unmarshal(data, &manifest) != nil {
			t.Fatalf("manifest.json: %v %s", err, data)
		}
	}
	if got := eval[[]string](t, ctx, `window.__csp`); len(got) != 0 {
		t.Errorf("Content-Security-Policy violations: %v", got)
	}
	if got := eval[bool](t, ctx, `document.documentElement.scrollWidth <= window.innerWidth`); !got {
		t.Errorf("the page scrolls sideways at %v px", eval[float64](t, ctx, `window.innerWidth`))
	}
	if strings.Join(names, ",") != "manifest.json,0.jpg,1.jpg" {
		t.Errorf("the zip's entries %v, want manifest.json,0.jpg,1.jpg", names)
	}
	if manifest.BatchID != id || len(manifest.Items) != 2 {
		t.Fatalf("the manifest: %+v", manifest)
	}
	for i, it := range manifest.Items {
		if it.JobID != jobs[i].ID || it.Status != "succeeded" || it.SHA256 != jobs[i].Output.SHA256 {
			t.Errorf("manifest item %d %+v, job %s sha256 %s", i, it, jobs[i].ID, jobs[i].Output.SHA256)
		}
	}
}

// TestBrowser_SourceURL: "Convert a file at a URL" adds an item named after the URL, its input
// format from the extension, and creates the job with source_url and input_bytes 2000000000:
// nothing is uploaded, the job is queued at create, and it is followed to its download. A source
// that answers 404 fails the job, and the page shows the API's message and its error_reason. A
// URL that is not http(s) is refused by the page itself.
func TestBrowser_SourceURL(t *testing.T) {
	png := testenv.Sample(t, "images/sample.png")
	var fetches atomic.Int32
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if r.URL.Path != "/pics/photo.png" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Write(png)
	}))
	defer src.Close()
	e, ctx, _ := openPage(t, func(c *service.Config) { c.FetchAllowPrivate = true })

	within(t, ctx, time.Minute, "type a URL the page refuses", chromedp.SendKeys("#source-url", "ftp://example.com/a.png\n"))
	if got := eval[string](t, ctx, `document.querySelector("#source-url-status").textContent + "|" + document.querySelectorAll(".item").length`); got != "Type an absolute http or https URL.|0" {
		t.Errorf("a non-http URL: %q", got)
	}
	eval[chromedp.Void](t, ctx, `document.querySelector("#source-url").value = ""; undefined`)

	// A source that answers 404: the job fails source_unreachable, with the API's message.
	within(t, ctx, time.Minute, "add a missing URL", chromedp.SendKeys("#source-url", src.URL+"/pics/missing.png\n"))
	waitFor(t, ctx, "png to jpeg's options of item 1", `document.querySelector("#item-1 .options").dataset.for === "png>jpeg"`)
	if got := eval[string](t, ctx, `document.querySelector("#item-1 .name").textContent + "|" + document.querySelector("#item-1-input").value + "|" + document.querySelector("#batch").hidden`); got != "missing.png|png|true" {
		t.Errorf("the URL's item (name|input|batch hidden): %q", got)
	}
	within(t, ctx, time.Minute, "convert the missing URL", chromedp.Click("#item-1 .convert"))
	waitFor(t, ctx, "the failed fetch", `document.querySelector("#item-1 .state").dataset.status === "failed"`)
	var list struct{ Data []map[string]any }
	e.Do("GET", "/v1/jobs?limit=1", e.Key, nil).JSON(t, &list)
	if len(list.Data) != 1 || list.Data[0]["error_reason"] != "source_unreachable" {
		t.Fatalf("the failed job: %v", list.Data)
	}
	want := "Failed: " + list.Data[0]["error_message"].(string) + " (conversion_failed, source_unreachable)"
	if got := eval[string](t, ctx, `document.querySelector("#item-1 .state").textContent`); got != want {
		t.Errorf("the failed fetch shows %q, want %q", got, want)
	}

	// The PNG at a URL, converted to JPEG with the page's defaults; no upload.
	within(t, ctx, time.Minute, "add the URL", chromedp.SendKeys("#source-url", src.URL+"/pics/photo.png\n"))
	waitFor(t, ctx, "png to jpeg's options of item 2", `document.querySelector("#item-2 .options").dataset.for === "png>jpeg"`)
	within(t, ctx, time.Minute, "convert the URL", chromedp.Click("#item-2 .convert"))
	waitFor(t, ctx, "the download link", `!document.querySelector("#item-2 .result").hidden`)
	e.Do("GET", "/v1/jobs?limit=1", e.Key, nil).JSON(t, &list)
	j := list.Data[0]
	if j["status"] != "succeeded" || j["source_url"] != src.URL+"/pics/photo.png" || j["input_bytes"] != 2000000000.0 || j["input_format"] != "png" || j["target_format"] != "jpeg" {
		t.Fatalf("the URL's job: %v", j)
	}
	if got := eval[string](t, ctx, `document.querySelector("#item-2 .download").textContent + "|" + document.querySelector("#item-2 .progress-row").hidden`); !strings.HasPrefix(got, "Download photo.jpg") || !strings.HasSuffix(got, "|true") {
		t.Errorf("the URL's result (link|progress hidden): %q", got)
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("the source was fetched %d times, want 2", n)
	}
}
