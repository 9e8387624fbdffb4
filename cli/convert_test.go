package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convsvc/convsvc/cli"
	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/internal/testing/testenv"
)

// runBinary runs the built convsvc in dir with stdin and extra environment, and returns its
// stdout, stderr and exit status.
func runBinary(t *testing.T, dir string, stdin []byte, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// workdir is a temporary directory holding sample.png.
func workdir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sample.png"), testenv.Sample(t, "images/sample.png"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runIn runs the root command in-process (cobra SetArgs/SetOut) with dir as the working
// directory, and returns stdout, stderr and the exit status Execute would use.
func runIn(t *testing.T, dir string, args ...string) (string, string, int, error) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	cmd := cli.NewRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errOut.String(), cli.ExitCode(err), err
}

// jobsOf lists every job of the key's account.
func jobsOf(t *testing.T, e *testenv.Env) []client.Job {
	t.Helper()
	c := &client.Client{BaseURL: e.URL, Key: e.Key}
	var jobs []client.Job
	for j, err := range c.ListJobs(context.Background(), client.ListJobsParams{PageSize: 100}) {
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	return jobs
}

func TestConvert_RefusesToOverwriteUnlessForce(t *testing.T) {
	dir := workdir(t)
	if err := os.WriteFile(filepath.Join(dir, "sample.jpg"), []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runBinary(t, dir, nil, nil, "convert", "sample.png", "--to", "jpeg")
	if code != 1 || out != "" || errOut != "convsvc: sample.jpg already exists; pass --force to overwrite it\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sample.jpg")); string(b) != "precious" {
		t.Fatalf("the existing file was changed to %d bytes", len(b))
	}
	out, errOut, code = runBinary(t, dir, nil, nil, "convert", "sample.png", "--to", "jpeg", "--force")
	if code != 0 || !strings.HasPrefix(out, "sample.png -> sample.jpg (") || errOut != "" {
		t.Fatalf("--force: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sample.jpg")); !bytes.HasPrefix(b, []byte{0xFF, 0xD8}) {
		t.Fatal("--force did not write the JPEG")
	}
	// No temporary file is left next to the output.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("directory holds %d entries, want sample.png and sample.jpg", len(entries))
	}
}

// Every check happens before a job is reserved: nothing is created on the server.
func TestConvert_ChecksEverythingBeforeReserving(t *testing.T) {
	e := testenv.Start(t)
	t.Setenv("CONVSVC_URL", e.URL)
	t.Setenv("CONVSVC_KEY", e.Key)
	dir := workdir(t)
	png := testenv.Sample(t, "images/sample.png")
	for _, sub := range []string{"a", "b"} {
		os.Mkdir(filepath.Join(dir, sub), 0o755)
		os.WriteFile(filepath.Join(dir, sub, "x.png"), png, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "empty.png"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "notes.xyz"), []byte("some words"), 0o644)
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"a/x.png", "b/x.png", "--to", "jpeg"},
			"a/x.png and b/x.png would both be written to x.jpg; convert them in separate runs with --output-dir or -o"},
		{[]string{"sample.png", "--to", "jpeg", "--output-dir", "missing"},
			"output directory missing does not exist; create it first (mkdir -p missing)"},
		{[]string{"sample.png", "--to", "jpeg", "-o", "missing/out.jpg"},
			"output directory missing does not exist; create it first (mkdir -p missing)"},
		{[]string{"empty.png", "--to", "jpeg"}, "empty.png is empty (0 bytes): there is nothing to convert"},
		{[]string{"a/x.png", "sample.png", "--to", "png", "--from", "png"}, "a/x.png: converting png to png changes nothing without an option; set one of: width, height, rotate, flip, crop, background, auto_orient, strip_metadata, max_bytes\n" +
			"sample.png: converting png to png changes nothing without an option; set one of: width, height, rotate, flip, crop, background, auto_orient, strip_metadata, max_bytes"},
		{[]string{"sample.png", "--to", "jpeg", "--crop", "1,2,3"}, "--crop \"1,2,3\": want LEFT,TOP,WIDTH,HEIGHT in pixels, like 10,20,300,200"},
		{[]string{"sample.png", "--to", "jpeg", "--rotate", "45"}, "options.rotate: must be 90, 180 or 270 (degrees clockwise), not 45"},
		{[]string{"sample.png", "--to", "jpeg", "-o", "./sample.png", "--force"},
			"sample.png: its output ./sample.png is the input sample.png; choose another with -o or --output-dir"},
		{[]string{"nothere.png", "--to", "jpeg"}, "nothere.png: no such file"},
		{[]string{"sample.png", "--to", "gif", "--quality", "50"},
			"options.quality: not accepted when converting to gif (accepted: width, height, fit, rotate, flip, crop, background, auto_orient, strip_metadata, max_bytes)"},
		{[]string{"sample.png", "--to", "jpeg", "--quality", "500"}, "options.quality: must be from 1 to 100"},
		{[]string{"sample.png", "--to", "jpeg", "--page", "2"}, "sample.png: options.page: only applies when the input is pdf"},
		{[]string{"sample.png", "--to", "wav"},
			"sample.png: cannot convert png to wav; png converts to: avif, bmp, gif, ico, jpeg, pdf, png, ppm, qoi, tiff, webp"},
		{[]string{"notes.xyz", "--to", "jpeg"}, "notes.xyz: cannot tell the format from extension \"xyz\"; pass --from"},
		{[]string{"sample.png", "--to", "nope"}, "unknown target format \"nope\"; `convsvc formats` lists them"},
		{[]string{"sample.png", "--to", "jepg"}, "unknown target format \"jepg\"; did you mean jpeg? (`convsvc formats` lists them)"},
	}
	for _, tc := range cases {
		out, _, code, err := runIn(t, dir, append([]string{"convert"}, tc.args...)...)
		if code != 1 || err == nil || err.Error() != tc.msg || out != "" {
			t.Errorf("convert %v: exit %d, stdout %q, error %v\nwant error %q", tc.args, code, out, err, tc.msg)
		}
	}
	if jobs := jobsOf(t, e); len(jobs) != 0 {
		t.Fatalf("%d jobs were reserved by refused commands", len(jobs))
	}
	// A read-only output directory (root may write anyway: then there is nothing to refuse).
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o555)
	if f, err := os.CreateTemp(ro, "probe"); err == nil {
		f.Close()
		os.Remove(f.Name())
		t.Log("running as root: the read-only directory case is skipped")
	} else {
		_, _, code, err := runIn(t, dir, "convert", "sample.png", "--to", "jpeg", "--output-dir", "ro")
		if code != 1 || err == nil || !strings.HasPrefix(err.Error(), "cannot write to output directory ro: ") {
			t.Errorf("read-only dir: exit %d, %v", code, err)
		}
	}
}

func TestConvert_OptionsReachTheJob(t *testing.T) {
	e := testenv.Start(t)
	t.Setenv("CONVSVC_URL", e.URL)
	t.Setenv("CONVSVC_KEY", e.Key)
	dir := workdir(t)
	out, _, code, err := runIn(t, dir, "convert", "sample.png", "--to", "jpeg", "--quality", "40", "--width", "16", "--json")
	if err != nil || code != 0 {
		t.Fatalf("exit %d: %v", code, err)
	}
	var job client.Job
	if err := json.Unmarshal([]byte(out), &job); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if job.Options == nil || job.Options.Quality != 40 || job.Options.Width != 16 || job.Status != client.StatusSucceeded {
		t.Fatalf("job %+v options %+v", job, job.Options)
	}
	f, err := os.Open(filepath.Join(dir, "sample.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := jpeg.DecodeConfig(f)
	if err != nil || cfg.Width != 16 {
		t.Fatalf("output is %d px wide (%v), want 16", cfg.Width, err)
	}
	// --lossless false is an option too, and jpeg does not take it.
	_, _, code, err = runIn(t, dir, "convert", "sample.png", "--to", "jpeg", "--lossless=false", "-f")
	if code != 1 || err == nil || !strings.HasPrefix(err.Error(), "options.lossless: not accepted when converting to jpeg") {
		t.Fatalf("--lossless=false to jpeg: exit %d, %v", code, err)
	}
}

// TestConvert_TransformFlags: the transform flags reach the job as options, and a same-format
// conversion with one of them runs (png to png, turned and cropped).
func TestConvert_TransformFlags(t *testing.T) {
	e := testenv.Start(t)
	t.Setenv("CONVSVC_URL", e.URL)
	t.Setenv("CONVSVC_KEY", e.Key)
	dir := workdir(t)
	out, _, code, err := runIn(t, dir, "convert", "sample.png", "--to", "png", "-o", "turned.png", "--rotate", "90", "--flip", "horizontal",
		"--crop", "0,0,20,10", "--no-auto-orient", "--keep-metadata", "--max-bytes", "200KB", "--json")
	if err != nil || code != 0 {
		t.Fatalf("exit %d: %v", code, err)
	}
	var job client.Job
	if err := json.Unmarshal([]byte(out), &job); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	o := job.Options
	if o == nil || o.Rotate != 90 || o.Flip != "horizontal" || o.Crop == nil || *o.Crop != (client.Crop{Left: 0, Top: 0, Width: 20, Height: 10}) ||
		o.AutoOrient == nil || *o.AutoOrient || o.StripMetadata == nil || *o.StripMetadata || o.MaxBytes != 200000 || job.Status != client.StatusSucceeded {
		t.Fatalf("job %+v options %+v", job, o)
	}
	f, err := os.Open(filepath.Join(dir, "turned.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil || cfg.Width != 10 || cfg.Height != 20 {
		t.Fatalf("output is %dx%d (%v), want 10x20", cfg.Width, cfg.Height, err)
	}
}

func TestConvert_Pipes(t *testing.T) {
	dir := t.TempDir()
	png := testenv.Sample(t, "images/sample.png")
	// Standard input recognised from its content, output to standard output.
	out, errOut, code := runBinary(t, dir, png, nil, "convert", "-", "--to", "gif", "-o", "-")
	if code != 0 || !strings.HasPrefix(out, "GIF89a") || !strings.HasPrefix(errOut, "- -> standard output (") {
		t.Fatalf("exit %d, stdout %q..., stderr %q", code, out[:min(len(out), 16)], errOut)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("-o - left %d files in the directory", len(entries))
	}
	// Standard input that cannot be recognised needs --from.
	_, errOut, code = runBinary(t, dir, []byte("plain words"), nil, "convert", "-", "--to", "gif")
	if code != 1 || errOut != "convsvc: cannot tell the format of standard input from its content; pass --from\n" {
		t.Fatalf("unrecognised stdin: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = runBinary(t, dir, nil, nil, "convert", "-", "--from", "png", "--to", "gif")
	if code != 1 || errOut != "convsvc: standard input is empty: there is nothing to convert\n" {
		t.Fatalf("empty stdin: exit %d, stderr %q", code, errOut)
	}
	// With --from and a file output named after standard input.
	out, errOut, code = runBinary(t, dir, png, nil, "convert", "-", "--from", "png", "--to", "jpeg")
	if code != 0 || !strings.HasPrefix(out, "- -> stdin.jpg (") {
		t.Fatalf("--from png: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestCLI_MessagesSayWhatToDo(t *testing.T) {
	dir := workdir(t)
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"convert", "sample.png", "--to", "jpeg", "--server", "http://127.0.0.1:1", "--key", "k"},
			"no convsvc is answering at http://127.0.0.1:1 (connection refused); start one with `convsvc serve`, or point --server (CONVSVC_URL) at a running one"},
		{[]string{"formats", "--server", "http://127.0.0.1:1"},
			"no convsvc is answering at http://127.0.0.1:1 (connection refused); start one with `convsvc serve`, or point --server (CONVSVC_URL) at a running one"},
		{[]string{"convert", "sample.png", "--to", "jpeg", "--qualty", "5"}, "unknown flag: --qualty; did you mean --quality?"},
		{[]string{"convert", "sample.png", "--to", "jpeg", "--outputdir", "x"}, "unknown flag: --outputdir; did you mean --output-dir?"},
		{[]string{"admin", "accounts", "show"}, `unknown command "show" for "convsvc admin accounts"; its commands are create, get, list, update`},
		{[]string{"admin", "account", "list"}, `unknown command "account" for "convsvc admin"; did you mean "accounts"?`},
		{[]string{"convrt", "x.png"}, `unknown command "convrt" for "convsvc"; did you mean "convert"?`},
		{[]string{"convert", "--to", "jpeg"}, "convert needs at least one INPUT file (- reads standard input), as in: convsvc convert photo.png --to jpeg"},
	}
	for _, tc := range cases {
		_, _, code, err := runIn(t, dir, tc.args...)
		if code != 1 || err == nil || err.Error() != tc.msg {
			t.Errorf("%v: exit %d, error %v\nwant %q", tc.args, code, err, tc.msg)
		}
	}
	// The binary prints the same, after "convsvc: ", and exits 1.
	_, errOut, code := runBinary(t, dir, nil, nil, "admin", "accounts", "show")
	if code != 1 || errOut != "convsvc: unknown command \"show\" for \"convsvc admin accounts\"; its commands are create, get, list, update\n" {
		t.Fatalf("binary: exit %d, stderr %q", code, errOut)
	}
	// A group without arguments still shows its help, successfully.
	out, _, code, err := runIn(t, dir, "admin", "accounts")
	if code != 0 || err != nil || !strings.Contains(out, "Available Commands:") {
		t.Fatalf("admin accounts: exit %d, %v, %q", code, err, out)
	}
}

// CONVSVC_URL and CONVSVC_KEY are the names for every command; CONVSVC_SERVER and
// CONVSVC_API_KEY still work as aliases.
func TestCLI_OneNamePerSettingWithAliases(t *testing.T) {
	e := testenv.Start(t)
	dir := workdir(t)
	t.Setenv("CONVSVC_ADMIN_TOKEN", e.AdminToken)
	for _, env := range [][2]string{{"CONVSVC_URL", "CONVSVC_KEY"}, {"CONVSVC_SERVER", "CONVSVC_API_KEY"}} {
		os.Unsetenv("CONVSVC_URL")
		os.Unsetenv("CONVSVC_SERVER")
		os.Unsetenv("CONVSVC_KEY")
		os.Unsetenv("CONVSVC_API_KEY")
		t.Setenv(env[0], e.URL)
		t.Setenv(env[1], e.Key)
		if out, _, code, err := runIn(t, dir, "admin", "accounts", "list"); code != 0 || !strings.Contains(out, e.AccountID) {
			t.Errorf("admin with %s: exit %d, %v, %q", env[0], code, err, out)
		}
		if out, _, code, err := runIn(t, dir, "formats", "png"); code != 0 || !strings.HasPrefix(out, "png: ") {
			t.Errorf("formats with %s: exit %d, %v, %q", env[0], code, err, out)
		}
		out, _, code, err := runIn(t, dir, "convert", "sample.png", "--to", "gif", "-f")
		if code != 0 || !strings.HasPrefix(out, "sample.png -> sample.gif (") {
			t.Errorf("convert with %s and %s: exit %d, %v, %q", env[0], env[1], code, err, out)
		}
	}
	if n := len(jobsOf(t, e)); n != 2 {
		t.Fatalf("%d jobs on the server, want the 2 conversions", n)
	}
	// Help names the main variable and the alias.
	out, _, _, _ := runIn(t, dir, "admin", "--help")
	if !strings.Contains(out, "[$CONVSVC_URL]") {
		t.Errorf("admin --help does not name CONVSVC_URL: %s", out)
	}
	out, _, _, _ = runIn(t, dir, "convert", "--help")
	if !strings.Contains(out, "[$CONVSVC_URL, or $CONVSVC_SERVER]") || !strings.Contains(out, "$CONVSVC_API_KEY]") {
		t.Errorf("convert --help: %s", out)
	}
}

// TestConvert_PrintsWarnings: what a conversion could not keep is printed on stderr, one line
// per warning, while stdout keeps its one summary line; --sheet picks another sheet.
func TestConvert_PrintsWarnings(t *testing.T) {
	e := testenv.Start(t)
	t.Setenv("CONVSVC_URL", e.URL)
	t.Setenv("CONVSVC_KEY", e.Key)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "book.xlsx"), testenv.Sample(t, "data/sample-sheets.xlsx"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code, err := runIn(t, dir, "convert", "book.xlsx", "--to", "csv")
	want := "warning: book.xlsx: the workbook has 3 sheets; only the first, \"Books\", was converted, not \"Costs\", \"Notes & ideas\" (choose one with the sheet option) (sheets_dropped)\n"
	if code != 0 || err != nil || !strings.HasPrefix(out, "book.xlsx -> book.csv (") || strings.Count(out, "\n") != 1 || errOut != want {
		t.Fatalf("exit %d (%v), stdout %q, stderr %q; want stderr %q", code, err, out, errOut, want)
	}
	out, errOut, code, err = runIn(t, dir, "convert", "book.xlsx", "--to", "csv", "--sheet", "Costs", "--force")
	if code != 0 || err != nil || errOut != "" {
		t.Fatalf("--sheet Costs: exit %d (%v), stdout %q, stderr %q", code, err, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "book.csv")); string(b) != "item,cents,paid\r\npaper,1250,true\r\nink,899,false\r\npostage,310,true\r\n" {
		t.Fatalf("--sheet Costs wrote %q", b)
	}
}
