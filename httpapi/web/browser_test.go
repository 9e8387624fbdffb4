package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/convsvc/convsvc/internal/testing/testenv"
	"github.com/convsvc/convsvc/service"
)

// screenshot, when set, is where the test saves a PNG of the page after a conversion
// (the README's picture is made with -screenshot docs/img/web-page.png).
var screenshot = flag.String("screenshot", "", "save a screenshot of the page to this PNG file (relative to the repository root)")

// chromiumPath finds Debian's chromium (or another Chrome); without one the test is skipped,
// except under CI=true, where a missing browser is a failure.
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH: install Debian's chromium package (apt-get install -y chromium)")
	}
	t.Skip("no chromium on PATH: apt-get install -y chromium to run the browser test")
	return ""
}

// startBrowser starts headless Chromium with a fresh profile, phone-sized, with downloads
// saved under their suggested names in dir.
func startBrowser(t *testing.T, dir string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // tests run as root in CI containers
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(390, 844),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser, bound to ctx, not to a timeout
		t.Fatalf("start chromium: %v", err)
	}
	// The window size is a request the window manager of a headless Chromium may round (one run
	// under load reported 500 px); the emulated viewport is what the page lays out in.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatalf("set the viewport: %v", err)
	}
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior:     browser.SetDownloadBehaviorBehaviorAllow,
		DownloadPath: dir,
	}); err != nil {
		t.Fatalf("set download behaviour: %v", err)
	}
	return ctx
}

// within runs steps with a deadline, failing the test with what on error.
func within(t *testing.T, ctx context.Context, d time.Duration, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := chromedp.Do(tctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval runs a JavaScript expression and decodes its value.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(tctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript predicate until it is true; generous bounds for a busy machine.
// On failure it reports what the page shows: the key's status and every item's state and error.
func waitFor(t *testing.T, ctx context.Context, what, predicate string) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	_, err := chromedp.Run(tctx, chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingTimeout(2*time.Minute), chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		shown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#key-status").textContent + " | " + [...document.querySelectorAll(".item")].map((li) => li.querySelector(".name").textContent + ": state=" + li.querySelector(".state").dataset.status + " " + JSON.stringify(li.querySelector(".state").textContent) + " error=" + JSON.stringify(li.querySelector(".error").textContent) + " upload=" + li.querySelector("progress").value).join(" | ")`))
		t.Fatalf("wait for %s: %v; the page shows: %s", what, err, shown)
	}
}

// TestBrowser_ConvertThroughThePage drives the page at GET / in headless Chromium against a
// whole service: a bad key shows the API's own message; a real PNG picked in the file input is
// converted to JPEG with an option, its upload goes straight to object storage (CORS), the
// state follows the job, and the downloaded file has the job's output bytes and the input's
// name; a slow conversion is stopped with the cancel button.
func TestBrowser_ConvertThroughThePage(t *testing.T) {
	e := testenv.Start(t, func(c *service.Config) { c.Workers = 1 })
	downloads := t.TempDir()
	ctx := startBrowser(t, downloads)

	within(t, ctx, time.Minute, "open the page", chromedp.Navigate(e.URL+"/"), chromedp.WaitVisible("#key"))
	// CSP violations after load (uploads, downloads, API calls) are collected and must be none.
	eval[chromedp.Void](t, ctx, `window.__csp = []; document.addEventListener("securitypolicyviolation", (ev) => window.__csp.push(ev.violatedDirective + " " + ev.blockedURI)); undefined`)

	// A wrong key: the page shows the API's own message.
	bad := e.Do("GET", "/v1/jobs?limit=1", "cs_wrong_key", nil)
	var badBody struct {
		Error struct{ Code, Message string }
	}
	json.Unmarshal(bad.Body, &badBody)
	if bad.Status != 403 || badBody.Error.Message == "" {
		t.Fatalf("the API's answer to a wrong key: %d %s", bad.Status, bad.Body)
	}
	within(t, ctx, time.Minute, "submit a wrong key", chromedp.SendKeys("#key", "cs_wrong_key\n"))
	waitFor(t, ctx, "the wrong key's error", `document.querySelector("#key-status").textContent.startsWith("The key was refused")`)
	if got := eval[string](t, ctx, `document.querySelector("#key-status").textContent`); !strings.Contains(got, badBody.Error.Message) || !strings.Contains(got, "unauthorized") {
		t.Errorf("key status %q lacks the API's message %q", got, badBody.Error.Message)
	}

	// The right key, kept in sessionStorage only.
	eval[chromedp.Void](t, ctx, `document.querySelector("#key").value = ""; document.querySelector("#key-status").textContent = ""; undefined`)
	within(t, ctx, time.Minute, "submit the key", chromedp.SendKeys("#key", e.Key+"\n"))
	waitFor(t, ctx, "the key accepted", `document.querySelector("#key-status").textContent.startsWith("Key accepted")`)
	if got := eval[string](t, ctx, `sessionStorage.getItem("convsvc.apiKey") + "|" + document.cookie + "|" + location.href`); got != e.Key+"||"+e.URL+"/" {
		t.Errorf("key storage: %q", got)
	}

	// Pick a real PNG, with transparency, which JPEG cannot keep: the page sniffs png, offers
	// its targets, and jpeg's options; the result lists the job's warning.
	input := filepath.Join(t.TempDir(), "holiday photo.png")
	if err := os.WriteFile(input, testenv.Sample(t, "images/sample-alpha.png"), 0o600); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, time.Minute, "pick the file", chromedp.SetUploadFiles("#files", []string{input}))
	waitFor(t, ctx, "the targets of png", `document.querySelector("#item-1-target option[value=jpeg]") !== null`)
	if got := eval[string](t, ctx, `document.querySelector("#item-1-input").value`); got != "png" {
		t.Fatalf("sniffed input format %q, want png", got)
	}
	eval[chromedp.Void](t, ctx, `(() => { const s = document.querySelector("#item-1-target"); s.value = "jpeg"; s.dispatchEvent(new Event("change")); })()`)
	waitFor(t, ctx, "jpeg's quality option", `document.querySelector("#item-1-opt-quality") !== null`)
	if got := eval[string](t, ctx, `document.querySelector("label[for=item-1-opt-quality]").textContent`); got == "" {
		t.Error("the quality option has no label")
	}
	// The state's moves are recorded as the page shows them.
	eval[chromedp.Void](t, ctx, `window.__states = []; new MutationObserver(() => { const s = document.querySelector("#item-1 .state").dataset.status; if (s && window.__states[window.__states.length-1] !== s) window.__states.push(s); }).observe(document.querySelector("#item-1 .state"), {attributes: true, childList: true, characterData: true, subtree: true}); undefined`)
	within(t, ctx, time.Minute, "convert", chromedp.SendKeys("#item-1-opt-quality", "80"), chromedp.Click("#item-1 .convert"))
	waitFor(t, ctx, "the download link", `!document.querySelector("#item-1 .result").hidden`)

	jobs := e.Do("GET", "/v1/jobs?limit=1", e.Key, nil)
	var list struct{ Data []testenv.Job }
	jobs.JSON(t, &list)
	if len(list.Data) != 1 || list.Data[0].Status != "succeeded" || list.Data[0].Output == nil {
		t.Fatalf("the job: %s", jobs.Body)
	}
	job := list.Data[0]
	var withOpts struct{ Data []map[string]any }
	jobs.JSON(t, &withOpts)
	if opts, _ := withOpts.Data[0]["options"].(map[string]any); opts["quality"] != 80.0 || job.InputFormat != "png" || job.TargetFormat != "jpeg" {
		t.Errorf("job %s: %s to %s with options %v", job.ID, job.InputFormat, job.TargetFormat, withOpts.Data[0]["options"])
	}
	if got := eval[float64](t, ctx, `document.querySelector("#item-1-progress").value`); int64(got) != int64(len(testenv.Sample(t, "images/sample-alpha.png"))) {
		t.Errorf("upload progress ends at %v bytes", got)
	}
	if got := eval[string](t, ctx, `document.querySelector("#item-1 .state").dataset.via || ""`); got != "events" {
		t.Errorf("the page followed the job by %q, want its event stream", got)
	}
	states := eval[[]string](t, ctx, `window.__states`)
	if len(states) < 2 || states[0] != "created" || states[len(states)-1] != "succeeded" {
		t.Errorf("states shown: %v, want created ... succeeded", states)
	}
	if got := eval[string](t, ctx, `document.querySelector("#item-1 .download").textContent`); !strings.HasPrefix(got, "Download holiday photo.jpg") {
		t.Errorf("link text %q", got)
	}
	if len(job.Output.Warnings) != 1 || job.Output.Warnings[0].Code != "alpha_dropped" {
		t.Fatalf("the job's warnings: %+v, want alpha_dropped", job.Output.Warnings)
	}
	wantWarning := "Not kept: " + job.Output.Warnings[0].Message + " (alpha_dropped)"
	if got := eval[string](t, ctx, `(() => { const u = document.querySelector("#item-1 .warnings"); return (u.hidden ? "hidden:" : "") + [...u.querySelectorAll("li")].map((li) => li.textContent).join("|"); })()`); got != wantWarning {
		t.Errorf("warnings shown %q, want %q", got, wantWarning)
	}
	if got := eval[string](t, ctx, `document.activeElement.className`); got != "download" {
		t.Errorf("focus after the conversion is on %q, want the download link", got)
	}
	// Only the buttons that apply are shown (and reachable by keyboard).
	if got := eval[string](t, ctx, `[...document.querySelectorAll("#item-1 .actions button")].filter((b) => b.offsetParent !== null).map((b) => b.textContent).join(",")`); got != "Convert,Remove" {
		t.Errorf("buttons shown after the conversion: %s", got)
	}
	if *screenshot != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		path := *screenshot
		if !filepath.IsAbs(path) {
			path = filepath.Join(testenv.RepoRoot(t), path) // relative to the repository, not the package
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The download: the input's name with the target's extension, the job's bytes.
	within(t, ctx, time.Minute, "download", chromedp.Click("#item-1 .download"))
	saved := filepath.Join(downloads, "holiday photo.jpg")
	deadline := time.Now().Add(2 * time.Minute)
	var data []byte
	for {
		var err error
		if data, err = os.ReadFile(saved); err == nil && int64(len(data)) == job.Output.Bytes {
			break
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(downloads)
			t.Fatalf("no %s of %d bytes after 2 minutes (dir: %v)", saved, job.Output.Bytes, entries)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != job.Output.SHA256 {
		t.Errorf("downloaded sha256 %x, job output %s", sum, job.Output.SHA256)
	}

	// The cancel button: a slow conversion is cancelled once started (queued or running).
	slow := filepath.Join(t.TempDir(), "noise.png")
	if err := os.WriteFile(slow, testenv.NoisePNG(t, 4500, 3000), 0o600); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, time.Minute, "pick the slow file", chromedp.SetUploadFiles("#files", []string{slow}))
	waitFor(t, ctx, "the targets of the slow file", `document.querySelector("#item-2-target option[value=gif]") !== null`)
	eval[chromedp.Void](t, ctx, `(() => { const s = document.querySelector("#item-2-target"); s.value = "gif"; s.dispatchEvent(new Event("change")); })()`)
	// The click lands where the button is: once gif's options are shown, the layout is still
	// (a click while they were loading hit where the button had been, on a loaded machine).
	waitFor(t, ctx, "png to gif's options", `document.querySelector("#item-2 .options").dataset.for === "png>gif"`)
	within(t, ctx, time.Minute, "convert the slow file", chromedp.Click("#item-2 .convert"))
	waitFor(t, ctx, "the slow job started", `["queued", "running"].includes(document.querySelector("#item-2 .state").dataset.status)`)
	// Its progress, from the job's event stream, shows while it runs.
	waitFor(t, ctx, "the slow job's progress", `/^Converting… \d+%$/.test(document.querySelector("#item-2 .state").textContent)`)
	if got := eval[string](t, ctx, `[...document.querySelectorAll("#item-2 .actions button")].filter((b) => b.offsetParent !== null).map((b) => b.textContent).join(",") + "|" + document.activeElement.className`); got != "Cancel,Remove|cancel" {
		t.Errorf("buttons shown while converting, and the focus: %s", got)
	}
	within(t, ctx, time.Minute, "cancel", chromedp.Click("#item-2 .cancel"))
	waitFor(t, ctx, "the cancelled state", `document.querySelector("#item-2 .state").dataset.status === "cancelled"`)
	jobs = e.Do("GET", "/v1/jobs?limit=1", e.Key, nil)
	jobs.JSON(t, &list)
	if len(list.Data) != 1 || list.Data[0].ID == job.ID || list.Data[0].Status != "cancelled" {
		t.Errorf("after cancel: %s", jobs.Body)
	}
	if got := eval[string](t, ctx, `document.querySelector("#item-2 .error").textContent`); got != "" {
		t.Errorf("cancel showed an error: %q", got)
	}

	// An unsupported pair is refused with the API's message: pick a file whose format has
	// no conversions, or force a target the input does not reach.
	eval[chromedp.Void](t, ctx, `(() => { const s = document.querySelector("#item-2-target"); const o = document.createElement("option"); o.value = "mp3"; s.appendChild(o); s.value = "mp3"; s.dispatchEvent(new Event("change")); })()`)
	within(t, ctx, time.Minute, "convert to an unsupported target", chromedp.Click("#item-2 .convert"))
	waitFor(t, ctx, "the unsupported pair's error", `document.querySelector("#item-2 .error").textContent !== ""`)
	if got := eval[string](t, ctx, `document.querySelector("#item-2 .error").textContent`); !strings.Contains(got, "cannot be converted") || !strings.Contains(got, "unsupported_format") {
		t.Errorf("unsupported pair error %q", got)
	}

	// A spent cap: the API's limit_reached message, on the account of another key.
	_, capped := e.NewAccount(1)
	e.Create(capped, "png", "jpeg", 10) // reserves the account's only cent
	eval[chromedp.Void](t, ctx, `document.querySelector("#key").value = ""; document.querySelector("#key-status").textContent = ""; undefined`)
	within(t, ctx, time.Minute, "submit the capped key", chromedp.SendKeys("#key", capped+"\n"))
	waitFor(t, ctx, "the capped key accepted", `document.querySelector("#key-status").textContent.startsWith("Key accepted")`)
	within(t, ctx, time.Minute, "convert on a spent cap", chromedp.Click("#item-1 .convert"))
	waitFor(t, ctx, "the spent cap's error", `document.querySelector("#item-1 .error").textContent !== ""`)
	if got := eval[string](t, ctx, `document.querySelector("#item-1 .error").textContent`); !strings.Contains(got, "limit_reached") {
		t.Errorf("spent cap error %q", got)
	}

	// Rate limited: the API's message and the wait from Retry-After.
	_, busy := e.NewAccount(100_000)
	for i := 0; ; i++ {
		r := e.Do("POST", "/v1/jobs", busy, map[string]any{"input_format": "png", "target_format": "jpeg", "input_bytes": 10})
		if r.Status == 429 {
			break
		}
		if r.Status != 200 || i > 1000 {
			t.Fatalf("create %d: %d %s", i, r.Status, r.Body)
		}
	}
	eval[chromedp.Void](t, ctx, `document.querySelector("#key").value = ""; document.querySelector("#key-status").textContent = ""; undefined`)
	within(t, ctx, time.Minute, "submit the rate-limited key", chromedp.SendKeys("#key", busy+"\n"))
	waitFor(t, ctx, "the rate-limited key accepted", `document.querySelector("#key-status").textContent.startsWith("Key accepted")`)
	within(t, ctx, time.Minute, "convert while rate limited", chromedp.Click("#item-1 .convert"))
	waitFor(t, ctx, "the rate limit's error", `document.querySelector("#item-1 .error").textContent.includes("rate_limited")`)
	if got := eval[string](t, ctx, `document.querySelector("#item-1 .error").textContent`); !strings.Contains(got, "Try again in ") {
		t.Errorf("rate limit error %q lacks the wait", got)
	}

	// Phone-sized: nothing wider than the screen, once the page has settled (a run at load 10+
	// saw a scroll width of 397 at 390 px once, with no element wider: what was wide then is
	// logged, and the page must fit within the wait).
	const fits = `document.documentElement.scrollWidth <= window.innerWidth`
	wideNow := func() string {
		wide := eval[[]string](t, ctx, `[...document.querySelectorAll("body, body *")].filter((el) => el.getBoundingClientRect().right + window.scrollX > window.innerWidth + 0.5 || el.scrollWidth > el.clientWidth + 0.5 && getComputedStyle(el).overflowX === "visible" && el.clientWidth > 0).map((el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className ? "." + String(el.className).replace(/ /g, ".") : "") + " right=" + Math.round(el.getBoundingClientRect().right + window.scrollX) + " scroll/client=" + el.scrollWidth + "/" + el.clientWidth + " " + JSON.stringify((el.textContent || "").slice(0, 60)))`)
		return fmt.Sprintf("scroll width %v at %v px; wider than the screen: %v", eval[float64](t, ctx, `document.documentElement.scrollWidth`), eval[float64](t, ctx, `window.innerWidth`), wide)
	}
	if !eval[bool](t, ctx, fits) {
		first := wideNow()
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := chromedp.Run(pctx, chromedp.Poll[chromedp.Void](fits, chromedp.WithPollingInterval(100*time.Millisecond)))
		cancel()
		if err != nil {
			t.Errorf("the page scrolls sideways: at first %s; after 30 s %s", first, wideNow())
		} else {
			t.Logf("the page scrolled sideways for a moment: %s", first)
		}
	}
	if got := eval[[]string](t, ctx, `window.__csp`); len(got) != 0 {
		t.Errorf("Content-Security-Policy violations: %v", got)
	}
}

// TestBrowser_XLSXSheetOption: the page offers the xlsx input's sheet option (a text field)
// only when the input is xlsx, whatever the target, and sends what is typed as the job's
// sheet: the workbook's "Costs" sheet is converted without the sheets_dropped warning a
// conversion of the first sheet gets. A PNG's options have no sheet field, nor does the
// workbook's once its input is switched to another format.
func TestBrowser_XLSXSheetOption(t *testing.T) {
	e, ctx := openPageWithKey(t)

	dir := t.TempDir()
	book := filepath.Join(dir, "budget.xlsx")
	if err := os.WriteFile(book, testenv.Sample(t, "data/sample-sheets.xlsx"), 0o600); err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(dir, "picture.png")
	if err := os.WriteFile(png, testenv.Sample(t, "images/sample-alpha.png"), 0o600); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, time.Minute, "pick the files", chromedp.SetUploadFiles("#files", []string{book, png}))
	waitFor(t, ctx, "the targets of xlsx", `document.querySelector("#item-1-target option[value=csv]") !== null`)
	waitFor(t, ctx, "the targets of png", `document.querySelector("#item-2-target option[value=jpeg]") !== null`)
	if got := eval[string](t, ctx, `document.querySelector("#item-1-input").value + "," + document.querySelector("#item-2-input").value`); got != "xlsx,png" {
		t.Fatalf("sniffed input formats %q, want xlsx,png", got)
	}
	// The PNG, to a target with options of its own: no sheet field.
	eval[chromedp.Void](t, ctx, `(() => { const s = document.querySelector("#item-2-target"); s.value = "jpeg"; s.dispatchEvent(new Event("change")); })()`)
	waitFor(t, ctx, "jpeg's quality option", `document.querySelector("#item-2-opt-quality") !== null`)
	if got := eval[bool](t, ctx, `document.querySelector("#item-2-opt-sheet") === null`); !got {
		t.Error("the PNG's options offer a sheet")
	}
	// The workbook, to csv (a target without options of its own): the sheet field, labelled.
	eval[chromedp.Void](t, ctx, `(() => { const s = document.querySelector("#item-1-target"); s.value = "csv"; s.dispatchEvent(new Event("change")); })()`)
	waitFor(t, ctx, "xlsx to csv's options", `document.querySelector("#item-1 .options").dataset.for === "xlsx>csv"`)
	if got := eval[string](t, ctx, `(() => { const c = document.querySelector("#item-1-opt-sheet"); return c.type + "|" + c.maxLength + "|" + document.querySelector("label[for=item-1-opt-sheet]").textContent + "|" + document.querySelector("#item-1 .options").hidden; })()`); !strings.HasPrefix(got, "text|31|Sheet") || !strings.HasSuffix(got, "|false") {
		t.Errorf("the sheet field (type|maxLength|label|box hidden): %s", got)
	}
	within(t, ctx, time.Minute, "convert the Costs sheet", chromedp.SendKeys("#item-1-opt-sheet", "Costs"), chromedp.Click("#item-1 .convert"))
	waitFor(t, ctx, "the download link", `!document.querySelector("#item-1 .result").hidden`)
	jobs := e.Do("GET", "/v1/jobs?limit=1", e.Key, nil)
	var list struct{ Data []testenv.Job }
	jobs.JSON(t, &list)
	var raw struct{ Data []map[string]any }
	jobs.JSON(t, &raw)
	if len(list.Data) != 1 || list.Data[0].Status != "succeeded" || list.Data[0].InputFormat != "xlsx" || list.Data[0].TargetFormat != "csv" || list.Data[0].Output == nil {
		t.Fatalf("the job: %s", jobs.Body)
	}
	if opts, _ := raw.Data[0]["options"].(map[string]any); len(opts) != 1 || opts["sheet"] != "Costs" {
		t.Errorf("the job's options %v, want exactly sheet Costs", raw.Data[0]["options"])
	}
	if w := list.Data[0].Output.Warnings; len(w) != 0 {
		t.Errorf("the job's warnings %+v, want none: the chosen sheet converted", w)
	}
	if got := eval[string](t, ctx, `(() => { const u = document.querySelector("#item-1 .warnings"); return u.hidden ? "" : u.textContent; })()`); got != "" {
		t.Errorf("warnings shown: %q", got)
	}
	// Switched to another input format, the workbook's options lose the sheet field.
	eval[chromedp.Void](t, ctx, `(() => { const s = document.querySelector("#item-1-input"); s.value = "csv"; s.dispatchEvent(new Event("change")); })()`)
	waitFor(t, ctx, "the targets of csv", `document.querySelector("#item-1-target option[value=json]") !== null`)
	eval[chromedp.Void](t, ctx, `(() => { const s = document.querySelector("#item-1-target"); s.value = "json"; s.dispatchEvent(new Event("change")); })()`)
	waitFor(t, ctx, "csv to json's options", `document.querySelector("#item-1 .options").dataset.for === "csv>json"`)
	if got := eval[bool](t, ctx, `document.querySelector("#item-1-opt-sheet") === null`); !got {
		t.Error("the sheet field stays when the input is csv")
	}
	if got := eval[bool](t, ctx, `document.documentElement.scrollWidth <= window.innerWidth`); !got {
		wide := eval[[]string](t, ctx, `[...document.querySelectorAll("body, body *")].filter((el) => el.getBoundingClientRect().right + window.scrollX > window.innerWidth + 0.5 || el.scrollWidth > el.clientWidth + 0.5 && getComputedStyle(el).overflowX === "visible" && el.clientWidth > 0).map((el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className ? "." + String(el.className).replace(/ /g, ".") : "") + " right=" + Math.round(el.getBoundingClientRect().right + window.scrollX) + " scroll/client=" + el.scrollWidth + "/" + el.clientWidth + " " + JSON.stringify((el.textContent || "").slice(0, 60)))`)
		t.Errorf("the page scrolls sideways at %v px (scroll width %v); wider than the screen: %v", eval[float64](t, ctx, `window.innerWidth`), eval[float64](t, ctx, `document.documentElement.scrollWidth`), wide)
	}
}

// TestBrowser_TransformOptions: for an image input the page offers the transforms; a PNG to
// PNG job with rotate, a crop and "keep metadata" sends them as the API's options.
func TestBrowser_TransformOptions(t *testing.T) {
	e, ctx := openPageWithKey(t)
	png := filepath.Join(t.TempDir(), "picture.png")
	if err := os.WriteFile(png, testenv.Sample(t, "images/sample.png"), 0o600); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, time.Minute, "pick the file", chromedp.SetUploadFiles("#files", []string{png}))
	waitFor(t, ctx, "png among png's targets", `document.querySelector("#item-1-target option[value=png]") !== null`)
	eval[chromedp.Void](t, ctx, `(() => { const s = document.querySelector("#item-1-target"); s.value = "png"; s.dispatchEvent(new Event("change")); })()`)
	waitFor(t, ctx, "png to png's options", `document.querySelector("#item-1 .options").dataset.for === "png>png"`)
	if got := eval[bool](t, ctx, `document.querySelector("#item-1-opt-background") === null`); !got {
		t.Error("a background field for a target with transparency")
	}
	eval[chromedp.Void](t, ctx, `(() => {
		const r = document.querySelector("#item-1-opt-rotate"); r.value = "90";
		document.querySelector("#item-1-opt-strip_metadata").checked = true;
	})()`)
	within(t, ctx, time.Minute, "convert", chromedp.SendKeys("#item-1-opt-crop", "0,0,20,10"), chromedp.Click("#item-1 .convert"))
	waitFor(t, ctx, "the download link", `!document.querySelector("#item-1 .result").hidden`)
	var raw struct{ Data []map[string]any }
	e.Do("GET", "/v1/jobs?limit=1", e.Key, nil).JSON(t, &raw)
	if len(raw.Data) != 1 || raw.Data[0]["status"] != "succeeded" {
		t.Fatalf("the job: %v", raw.Data)
	}
	opts, _ := raw.Data[0]["options"].(map[string]any)
	crop, _ := opts["crop"].(map[string]any)
	if len(opts) != 3 || opts["rotate"] != 90.0 || opts["strip_metadata"] != false || crop["width"] != 20.0 || crop["height"] != 10.0 {
		t.Errorf("the job's options %v, want rotate 90, strip_metadata false and the crop", opts)
	}
}

// TestBrowser_Preset: a preset typed into an item's preset field is sent as create's preset,
// with no options (the option fields are disabled while a preset is named, as the API refuses
// options beside one): the job takes the preset's options. An unknown preset shows the API's
// message; a preset the API accepted is offered in the page's list of preset names.
func TestBrowser_Preset(t *testing.T) {
	e, ctx := openPageWithKey(t)
	if r := e.Do("PUT", "/v1/admin/presets/tiny-jpeg", e.AdminToken, map[string]any{"target_format": "jpeg", "options": map[string]any{"width": 16, "quality": 60}}); r.Status != 201 {
		t.Fatalf("PUT preset: %d %s", r.Status, r.Body)
	}
	dir := t.TempDir()
	var files []string
	for _, name := range []string{"a.png", "b.png"} {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, testenv.Sample(t, "images/sample.png"), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	within(t, ctx, time.Minute, "pick the files", chromedp.SetUploadFiles("#files", files))
	for _, n := range []string{"1", "2"} {
		waitFor(t, ctx, "png to jpeg's options of item "+n, `document.querySelector("#item-`+n+` .options").dataset.for === "png>jpeg"`)
	}
	if got := eval[string](t, ctx, `document.querySelector("label[for=item-1-preset]").textContent + "|" + document.querySelector("#item-1-preset").getAttribute("list")`); got != "Preset (optional)|preset-names" {
		t.Errorf("the preset field (label|list): %q", got)
	}
	// An unknown preset: the API's own message, and the job is not created.
	within(t, ctx, time.Minute, "convert with an unknown preset", chromedp.SendKeys("#item-2-preset", "nope"), chromedp.Click("#item-2 .convert"))
	waitFor(t, ctx, "the unknown preset's error", `document.querySelector("#item-2 .error").textContent.includes("nope")`)
	if got := eval[bool](t, ctx, `document.querySelector("#item-2 .options").disabled && !document.querySelector("#item-2 .preset-help").hidden`); !got {
		t.Error("the options are not disabled beside a preset")
	}
	// The preset, with a quality typed before: only the preset is sent.
	within(t, ctx, time.Minute, "convert with the preset",
		chromedp.SendKeys("#item-1-opt-quality", "90"), chromedp.SendKeys("#item-1-preset", "tiny-jpeg"), chromedp.Click("#item-1 .convert"))
	waitFor(t, ctx, "the download link", `!document.querySelector("#item-1 .result").hidden`)
	var raw struct{ Data []map[string]any }
	e.Do("GET", "/v1/jobs", e.Key, nil).JSON(t, &raw)
	if len(raw.Data) != 1 || raw.Data[0]["status"] != "succeeded" || raw.Data[0]["target_format"] != "jpeg" {
		t.Fatalf("the jobs: %v", raw.Data)
	}
	if opts, _ := raw.Data[0]["options"].(map[string]any); len(opts) != 2 || opts["width"] != 16.0 || opts["quality"] != 60.0 {
		t.Errorf("the job's options %v, want the preset's width 16 and quality 60", raw.Data[0]["options"])
	}
	if got := eval[string](t, ctx, `[...document.querySelectorAll("#preset-names option")].map((o) => o.value).join(",")`); got != "tiny-jpeg" {
		t.Errorf("the page's preset names %q, want tiny-jpeg", got)
	}
	// Cleared, the options count again.
	eval[chromedp.Void](t, ctx, `(() => { const p = document.querySelector("#item-2-preset"); p.value = ""; p.dispatchEvent(new Event("input")); })()`)
	if got := eval[bool](t, ctx, `!document.querySelector("#item-2 .options").disabled && document.querySelector("#item-2 .preset-help").hidden`); !got {
		t.Error("the options stay disabled without a preset")
	}
}

// openPageWithKey starts a service with one worker and a browser on its page, with the
// account's key entered and accepted.
func openPageWithKey(t *testing.T) (*testenv.Env, context.Context) {
	t.Helper()
	e, ctx, _ := openPage(t)
	return e, ctx
}

// openPage starts a service with one worker (and opts) and a browser on its page, with the
// account's key entered and accepted; downloads go to the directory it returns.
func openPage(t *testing.T, opts ...func(*service.Config)) (*testenv.Env, context.Context, string) {
	t.Helper()
	e := testenv.Start(t, append([]func(*service.Config){func(c *service.Config) { c.Workers = 1 }}, opts...)...)
	downloads := t.TempDir()
	ctx := startBrowser(t, downloads)
	within(t, ctx, time.Minute, "open the page", chromedp.Navigate(e.URL+"/"), chromedp.WaitVisible("#key"))
	within(t, ctx, time.Minute, "submit the key", chromedp.SendKeys("#key", e.Key+"\n"))
	waitFor(t, ctx, "the key accepted", `document.querySelector("#key-status").textContent.startsWith("Key accepted")`)
	return e, ctx, downloads
}

// TestBrowser_FailedUploadCancelsTheJob: files are added with the likeliest target chosen
// (Markdown to PDF, CSV to XLSX; the alphabetically first, AVIF and EPUB, before). When a step
// fails after the job was reserved (here object storage refuses the page's origin, so the
// upload fails in the browser), the page cancels the job, so its cent is released at once
// (before, the job stayed created, holding its reservation until it expired), and the error's
// hint names the fix for the server's object storage: --cors-origins for convsvc's own, the
// bucket's CORS rule for S3.
func TestBrowser_FailedUploadCancelsTheJob(t *testing.T) {
	testenv.LocalBlobsOnly(t, "object storage refusing the page's origin through --cors-origins")
	e := testenv.Start(t, func(c *service.Config) { c.Workers = 1; c.CORSOrigins = []string{"https://elsewhere.example"} })
	ctx := startBrowser(t, t.TempDir())
	within(t, ctx, time.Minute, "open the page", chromedp.Navigate(e.URL+"/"), chromedp.WaitVisible("#key"))
	within(t, ctx, time.Minute, "submit the key", chromedp.SendKeys("#key", e.Key+"\n"))
	waitFor(t, ctx, "the key accepted", `document.querySelector("#key-status").textContent.startsWith("Key accepted")`)

	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.md")
	table := filepath.Join(dir, "table.csv")
	if err := os.WriteFile(notes, []byte("# Notes\n\nSome words.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(table, []byte("a,b\n1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, time.Minute, "pick the files", chromedp.SetUploadFiles("#files", []string{notes, table}))
	waitFor(t, ctx, "the targets of markdown", `document.querySelector("#item-1-target option[value=pdf]") !== null`)
	waitFor(t, ctx, "the targets of csv", `document.querySelector("#item-2-target option[value=xlsx]") !== null`)
	if got := eval[string](t, ctx, `document.querySelector("#item-1-target").value + "," + document.querySelector("#item-2-target").value`); got != "pdf,xlsx" {
		t.Errorf("default targets of notes.md and table.csv: %s, want pdf,xlsx", got)
	}

	reserved := func() float64 { return e.Account(e.AccountID)["reserved_cents"].(float64) }
	for i, c := range []struct{ storage, hint string }{
		{"local", "the operator allows it with --cors-origins"},
		{"s3", "the bucket's CORS rule must allow this page's origin, " + e.URL},
	} {
		item := "#item-" + strconv.Itoa(i+1)
		eval[chromedp.Void](t, ctx, `document.body.dataset.objectStorage = "`+c.storage+`"; undefined`)
		within(t, ctx, time.Minute, "convert "+item, chromedp.Click(item+" .convert"))
		waitFor(t, ctx, "the failed upload's job cancelled", `document.querySelector("`+item+` .state").dataset.status === "cancelled"`)
		if got := eval[string](t, ctx, `document.querySelector("`+item+` .error").textContent`); !strings.Contains(got, "The upload to object storage failed") || !strings.Contains(got, c.hint) {
			t.Errorf("%s storage: error %q lacks %q", c.storage, got, c.hint)
		}
		if got := eval[string](t, ctx, `document.querySelector("`+item+` .state").textContent`); got != "Cancelled, so nothing is charged." {
			t.Errorf("%s storage: state %q", c.storage, got)
		}
		jobs := e.Do("GET", "/v1/jobs?limit=1", e.Key, nil)
		var list struct{ Data []testenv.Job }
		jobs.JSON(t, &list)
		if len(list.Data) != 1 || list.Data[0].Status != "cancelled" {
			t.Fatalf("%s storage: the reserved job after the failed upload: %s", c.storage, jobs.Body)
		}
		if r := reserved(); r != 0 {
			t.Errorf("%s storage: %v cents still reserved after the failed upload", c.storage, r)
		}
		if got := eval[string](t, ctx, `[...document.querySelectorAll("`+item+` .actions button")].filter((b) => b.offsetParent !== null).map((b) => b.textContent).join(",")`); got != "Convert,Remove" {
			t.Errorf("buttons after the failure: %s", got)
		}
	}
}

// TestBrowser_ConvertFromCache: the page sends the file's SHA-256 (taken with crypto.subtle)
// as input_sha256, so converting the same file a second time is answered from the conversion
// cache at create: no PUT leaves the page, the state says so, and the output is the first's.
func TestBrowser_ConvertFromCache(t *testing.T) {
	e, ctx, _ := openPage(t, testenv.Cache)
	data := testenv.Sample(t, "images/sample.png")
	png := filepath.Join(t.TempDir(), "picture.png")
	if err := os.WriteFile(png, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// Every PUT the page opens is counted.
	eval[chromedp.Void](t, ctx, `window.__puts = 0; (() => { const open = XMLHttpRequest.prototype.open; XMLHttpRequest.prototype.open = function (m, ...rest) { if (String(m).toUpperCase() === "PUT") window.__puts++; return open.call(this, m, ...rest); }; })(); undefined`)
	for i, n := range []string{"1", "2"} {
		item := "#item-" + n
		within(t, ctx, time.Minute, "pick the file", chromedp.SetUploadFiles("#files", []string{png}))
		waitFor(t, ctx, "jpeg among the targets", `document.querySelector("`+item+`-target option[value=jpeg]") !== null`)
		eval[chromedp.Void](t, ctx, `(() => { const s = document.querySelector("`+item+`-target"); s.value = "jpeg"; s.dispatchEvent(new Event("change")); })()`)
		within(t, ctx, time.Minute, "convert "+item, chromedp.Click(item+" .convert"))
		waitFor(t, ctx, "the download link of "+item, `!document.querySelector("`+item+` .result").hidden`)
		got := eval[string](t, ctx, `window.__puts + "|" + document.querySelector("`+item+` .state").dataset.cached + "|" + document.querySelector("`+item+` .state").textContent`)
		want := []string{"1||Done.", "1|true|Done: from cache, nothing uploaded or converted."}[i]
		if got != want {
			t.Fatalf("after converting %s (PUTs|cached|state): %q, want %q", item, got, want)
		}
	}
	// The second job was created succeeded (a hit at create: only input_sha256 makes one)
	// with the first's output.
	var list struct{ Data []map[string]any }
	e.Do("GET", "/v1/jobs", e.Key, nil).JSON(t, &list)
	if len(list.Data) != 2 {
		t.Fatalf("jobs: %v", list.Data)
	}
	second, first := list.Data[0], list.Data[1]
	out1, _ := first["output"].(map[string]any)
	out2, _ := second["output"].(map[string]any)
	if second["started_at"] != nil || second["attempt"] != 0.0 || out2["cached"] != true || out1["cached"] != false || out2["sha256"] != out1["sha256"] {
		t.Errorf("jobs %v then %v: want the second answered from the cache at create, with the first's output", first, second)
	}
}
