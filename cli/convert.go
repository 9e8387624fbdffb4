package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/convert/standard"
	"github.com/convsvc/convsvc/service"
)

// convertOptions are the flags of convert.
type convertOptions struct {
	fontDir   string // --font-dir for the embedded server
	to        string
	from      string
	output    string
	outputDir string
	zip       string // --zip: every output into one zip file
	server    string
	key       string
	jsonOut   bool
	force     bool
	noCache   bool // --no-cache: no input_sha256, and "cache": false
	parallel  int
	timeout   time.Duration
	verbose   bool
	opts      client.Options
	lossless  bool
	preset    string
	// Transform flags (issue 31): crop as "L,T,W,H", the orientation and metadata switches.
	crop         string
	noAutoOrient bool
	keepMetadata bool
	maxBytes     sizeFlag
	// Remote files (issue 33): --source-url, --deliver-to, --deliver-header.
	remoteFlags
}

// maxParallel bounds convert --parallel: files in flight at once, each with its own upload.
const maxParallel = 256

// stdio names standard input (as INPUT) and standard output (as -o).
const stdio = "-"

func newConvertCommand() *cobra.Command {
	var o convertOptions
	cmd := &cobra.Command{
		Use:   "convert INPUT... --to FORMAT [-o OUTPUT]",
		Short: "Convert files through the API (an embedded server when --server is not set)",
		Long: "Convert files through the whole API flow: reserve a job, upload to the signed URL,\n" +
			"start, wait, download. Without --server it starts an embedded convsvc in a temporary\n" +
			"data dir, in-process, and still goes through real HTTP.\n\n" +
			"Everything that can be checked is checked before any job is reserved: the inputs are\n" +
			"readable and not empty, each pair converts, the options suit the target, the output\n" +
			"directories exist and are writable, no two inputs write the same output, and no output\n" +
			"exists already (pass --force to overwrite), and -o's extension is the target's. A file\n" +
			"whose content is another format than its extension says (a JPEG named .png) is\n" +
			"converted as what it is, with a notice on stderr. INPUT - reads standard input (give\n" +
			"--from when its format cannot be recognised); -o - writes the result to standard output.\n" +
			"Several files (or --zip) go through batches: one request reserves up to 500 jobs,\n" +
			"one starts them and one archive brings every output back, so a directory of files is a\n" +
			"handful of requests; the embedded server does not rate-limit its own user.\n" +
			"Ctrl-C (or SIGTERM) cancels the jobs in flight, removes temporary files and exits 130.",
		Example: "  convsvc convert photo.png --to jpeg --quality 80 --width 1024\n" +
			"  convsvc convert --source-url https://example.com/photo.heic --to png\n" +
			"  convsvc convert scan.pdf --to png --deliver-to \"$PRESIGNED_PUT_URL\" --deliver-header 'Content-Type: image/png'\n" +
			"  convsvc convert *.png --to gif --output-dir out/\n" +
			"  convsvc convert *.md --to pdf --zip docs.zip\n" +
			"  cat scan.pdf | convsvc convert - --from pdf --to png --page 2 -o - > page2.png\n" +
			"  CONVSVC_URL=http://127.0.0.1:8080 CONVSVC_KEY=cs_live_... convsvc convert scan.tiff --to png -o scan.png",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !cmd.Flags().Changed("source-url") {
				return errors.New("convert needs at least one INPUT file (- reads standard input), as in: convsvc convert photo.png --to jpeg")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	f := cmd.Flags()
	f.StringVar(&o.to, "to", "", "target format id or extension (see convsvc formats)")
	f.StringVar(&o.from, "from", "", "input format id (default: from the file extension, or the content for standard input)")
	f.StringVarP(&o.output, "output", "o", "", "output file, - for standard output (one input only; default: INPUT's name with the target's extension, in the current directory)")
	f.StringVar(&o.outputDir, "output-dir", "", "directory for outputs (default: current directory)")
	f.StringVar(&o.zip, "zip", "", "write every output into this zip file (named as they would be in --output-dir)")
	f.BoolVarP(&o.force, "force", "f", false, "overwrite outputs that exist")
	f.StringVar(&o.server, "server", "", "API base URL of a running convsvc (default: an embedded one) [$CONVSVC_URL, or $CONVSVC_SERVER]")
	f.StringVar(&o.key, "key", "", "API key for --server [$CONVSVC_KEY, $CONVSVC_KEY_FILE, or $CONVSVC_API_KEY]")
	f.IntVar(&o.opts.Quality, "quality", 0, "quality of a lossy target, 1 to 100 (avif, jpeg, webp)")
	f.IntVar(&o.opts.Width, "width", 0, "resize to this width in pixels (with only --width, the height keeps the aspect ratio)")
	f.IntVar(&o.opts.Height, "height", 0, "resize to this height in pixels")
	f.StringVar(&o.opts.Fit, "fit", "", "with --width and --height: contain, cover or fill")
	f.IntVar(&o.opts.Page, "page", 0, "page of a PDF input, from 1")
	f.IntVar(&o.opts.DPI, "dpi", 0, "resolution a PDF or SVG input is rendered at, 10 to 1200")
	f.BoolVar(&o.lossless, "lossless", false, "lossless encoding (webp)")
	f.StringVar(&o.opts.Pages, "pages", "", `pages of a PDF or document input: "all", "1-3,7", "3-"; several pages to PNG, JPEG... give a .zip of page-0001.png..., to tiff one multi-page TIFF, pdf to pdf a PDF of those pages`)
	f.StringVar(&o.preset, "preset", "", "run the operator's preset NAME (its target and options; --to must be its target, other option flags are refused)")
	f.StringVar(&o.opts.Sheet, "sheet", "", "worksheet of an xlsx input: its name, or its position from 1 (default: the first, with a warning naming the others)")
	f.IntVar(&o.opts.Rotate, "rotate", 0, "turn an image clockwise: 90, 180 or 270 (after EXIF orientation and --crop)")
	f.StringVar(&o.opts.Flip, "flip", "", "mirror an image: horizontal or vertical (after --rotate)")
	f.StringVar(&o.crop, "crop", "", "keep a rectangle of an image, LEFT,TOP,WIDTH,HEIGHT in pixels of the upright source, before resizing")
	f.StringVar(&o.opts.Background, "background", "", "colour transparency is flattened onto for targets without it (jpeg), #rrggbb (default white)")
	f.BoolVar(&o.noAutoOrient, "no-auto-orient", false, "leave an image as stored instead of applying its EXIF orientation")
	f.BoolVar(&o.keepMetadata, "keep-metadata", false, "carry EXIF, XMP and the ICC profile into jpeg, png and webp outputs (default: strip them, converting the profile to sRGB)")
	f.Var(&o.maxBytes, "max-bytes", "largest output accepted, e.g. 200KB: jpeg, webp and avif lower their quality to fit, else the job fails")
	f.BoolVar(&o.jsonOut, "json", false, "print each final Job as JSON")
	f.BoolVar(&o.noCache, "no-cache", false, "convert even when the server's conversion cache holds the result (by default each file's SHA-256 is sent as input_sha256, and a file converted before the same way is not uploaded again)")
	o.addRemoteFlags(f)
	f.IntVar(&o.parallel, "parallel", 4, "files converted at once")
	f.DurationVar(&o.timeout, "timeout", 15*time.Minute, "give up on a file after this long")
	f.BoolVar(&o.verbose, "verbose", false, "show the embedded server's log")
	f.StringVar(&o.fontDir, "font-dir", fontDirDefault(), "embedded server: directory searched for fonts documents and SVG text name or need beyond the embedded ones; empty: embedded only [$CONVSVC_FONT_DIR]")
	cmd.MarkFlagRequired("to")
	return cmd
}

// plan is one file to convert, checked before anything is reserved.
type plan struct {
	input string // as given; "-" for standard input
	path  string // the file read (a temporary copy of standard input)
	size  int64
	from  string
	out   string // "-" for standard output
	// notice, when set, tells the user that the file was taken for another format than its
	// extension says (what its content is); it is printed on stderr before any job.
	notice string
}

func (o *convertOptions) run(cmd *cobra.Command, inputs []string) (err error) {
	if cmd.Flags().Changed("lossless") {
		o.opts.Lossless = &o.lossless
	}
	if err := o.transformFlags(cmd); err != nil {
		return err
	}
	if o.sourceURL != "" {
		return o.runRemote(cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.Context(), inputs)
	}
	if err := o.checkArgs(inputs); err != nil {
		return err
	}
	deliver, err := o.delivery()
	if err != nil {
		return err
	}
	o.deliver = deliver
	parent := cmd.Context()
	ctx, stopSignals := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	// Whatever happens (an error, Ctrl-C), temporary files go; the deferred calls run in
	// reverse order, so jobs are cancelled while the embedded server still runs.
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()
	interrupted := func() bool { return ctx.Err() != nil && parent.Err() == nil }
	defer func() {
		if interrupted() {
			err = errInterrupted
		}
	}()

	plans, err := o.readInputs(cmd, inputs, func(f func()) { cleanups = append(cleanups, f) })
	if err != nil {
		return err
	}
	if o.zip != "" {
		// The outputs are named as in an empty directory, then written into the zip.
		if err := checkOutput(o.zip, o.force); err != nil {
			return err
		}
		dir, err := os.MkdirTemp("", "convsvc-zip-*")
		if err != nil {
			return err
		}
		cleanups = append(cleanups, func() { os.RemoveAll(dir) })
		o.outputDir = dir
	}
	embedded := o.server == ""
	if embedded {
		stopEmbedded, err := o.startEmbedded(cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		cleanups = append(cleanups, stopEmbedded)
	} else if o.key == "" {
		return errors.New("--server needs an API key: pass --key or set CONVSVC_KEY")
	}
	// A batch larger than the key's write budget (120 a minute by default) waits out each
	// 429 as its Retry-After says instead of failing files with rate_limited, and says so.
	notice := &rateNotice{w: cmd.ErrOrStderr(), now: time.Now}
	c := &client.Client{BaseURL: o.server, Key: o.key, WaitOutRateLimit: true, OnRetry: notice.retry}
	target, err := o.check(ctx, c, plans)
	for _, p := range plans {
		if p.notice != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), "convsvc: "+p.notice)
		}
	}
	if err != nil {
		return err
	}
	if embedded {
		o.coldStart(plans, target)
	}

	// On a terminal, one line shows transfers and job states; otherwise stdout carries exactly
	// one summary line (or JSON Job) per converted file. With -o -, stdout is the output, and
	// the rest goes to stderr.
	report := cmd.OutOrStdout()
	if o.output == stdio {
		report = cmd.ErrOrStderr()
	}
	prog := newProgress(report)
	defer prog.close()
	var mu sync.Mutex
	var errs []error
	var cancelled atomic.Int32
	files := make([]*fileProgress, len(plans))
	for i, p := range plans {
		files[i] = prog.add(p.input)
	}
	if o.useBatches(plans) {
		b := &batchRun{o: o, c: c, prog: prog, files: files, report: func(i int, jobID, line string, warnings []client.Warning) {
			if o.jsonOut {
				if job, err := c.GetJob(ctx, jobID, 0); err == nil {
					js, _ := json.Marshal(job)
					line = string(js)
				}
			}
			prog.finish(files[i], line)
			prog.note(cmd.ErrOrStderr(), warningLines(plans[i].input, client.Job{Output: &client.Output{Warnings: warnings}}))
		}}
		if prog.enabled {
			bc := *c // the batch's waits show on the progress line
			bc.OnRetry = retryState(prog, files[len(files)-1])
			b.c = &bc
		}
		n, err := o.runBatches(ctx, b.c, target, plans, b)
		if interrupted() {
			prog.close()
			fmt.Fprintf(cmd.ErrOrStderr(), "convsvc: interrupted: cancelled %s, removed temporary files\n", plural(n, "unfinished job", "unfinished jobs"))
			return errInterrupted
		}
		return err
	}
	sem := make(chan struct{}, max(1, o.parallel))
	var wg sync.WaitGroup
	for i, p := range plans {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fc := *c // this file's client: its waits show on its progress line
			if prog.enabled {
				fc.OnRetry = retryState(prog, files[i])
			}
			job, err := o.convertOne(ctx, &fc, target, p, cmd.OutOrStdout(), prog, files[i])
			if job.ID != "" && !job.Status.Finished() {
				// Failed or interrupted with the job unfinished: cancel it, so that it is
				// neither charged nor left holding its reservation. After a failure the
				// cancel may wait out the rate limit; after Ctrl-C it gets 10 s at most.
				limit := 2 * time.Minute
				if interrupted() {
					limit = 10 * time.Second
				}
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
				if _, cerr := c.CancelJob(cctx, job.ID); cerr == nil {
					cancelled.Add(1)
				}
				cancel()
			}
			if err != nil {
				prog.finish(files[i], "")
				if ctx.Err() == nil || !interrupted() {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: %s", p.input, describe(err)))
					mu.Unlock()
				}
				return
			}
			line := fmt.Sprintf("%s -> %s (%s, %s)", p.input, p.out, plural(job.Output.Bytes, "byte", "bytes"), job.ID)
			if o.output == stdio {
				line = fmt.Sprintf("%s -> standard output (%s, %s)", p.input, plural(job.Output.Bytes, "byte", "bytes"), job.ID)
			}
			if o.jsonOut {
				b, _ := json.Marshal(job)
				line = string(b)
			}
			prog.finish(files[i], line)
			prog.note(cmd.ErrOrStderr(), warningLines(p.input, job))
		}()
	}
	wg.Wait()
	if interrupted() {
		prog.close()
		fmt.Fprintf(cmd.ErrOrStderr(), "convsvc: interrupted: cancelled %s, removed temporary files\n", plural(cancelled.Load(), "unfinished job", "unfinished jobs"))
		return errInterrupted
	}
	return errors.Join(errs...)
}

// retryState shows a client's waits (a 429's Retry-After, a retry's backoff) on fp's
// progress line.
func retryState(prog *progress, fp *fileProgress) func(time.Duration, *client.APIError) {
	return func(wait time.Duration, err *client.APIError) {
		if err.Status == http.StatusTooManyRequests {
			prog.state(fp, fmt.Sprintf("rate limited: waiting %d s", ceilSeconds(wait)))
		} else {
			prog.state(fp, fmt.Sprintf("%s: retrying in %d s", err.Code, ceilSeconds(wait)))
		}
	}
}

// warningLines describes what a succeeded job's conversion could not keep, one line per
// warning: "warning: <file>: <message> (<code>)".
func warningLines(input string, job client.Job) []string {
	if job.Output == nil {
		return nil
	}
	var lines []string
	for _, w := range job.Output.Warnings {
		lines = append(lines, fmt.Sprintf("warning: %s: %s (%s)", input, w.Message, w.Code))
	}
	return lines
}

// checkArgs checks the arguments that need no file and no server.
func (o *convertOptions) checkArgs(inputs []string) error {
	switch {
	case o.parallel < 1 || o.parallel > maxParallel:
		return fmt.Errorf("--parallel is %d: use 1 to %d", o.parallel, maxParallel)
	case o.timeout <= 0:
		return fmt.Errorf("--timeout is %s: use a duration above 0, like 15m", o.timeout)
	}
	if o.output != "" && len(inputs) > 1 {
		return errors.New("-o names one output; with several inputs use --output-dir")
	}
	if o.preset != "" && !o.opts.IsZero() {
		return fmt.Errorf("--preset %s runs the preset's options: drop the option flags (%s)", o.preset, strings.Join(convertOptionsSet(o.opts), ", "))
	}
	if o.output != "" && o.outputDir != "" {
		return errors.New("-o and --output-dir exclude each other: -o names the output file itself")
	}
	if o.zip != "" && (o.output != "" || o.outputDir != "") {
		return errors.New("--zip excludes -o and --output-dir: every output goes into the zip file")
	}
	n := 0
	for _, in := range inputs {
		if in == stdio {
			n++
		}
	}
	if n > 1 {
		return errors.New("standard input (-) can be read only once")
	}
	return nil
}

// readInputs checks that every input is a readable, non-empty regular file, copying standard
// input to a temporary file (removed by the cleanup it registers) to know its size.
func (o *convertOptions) readInputs(cmd *cobra.Command, inputs []string, cleanup func(func())) ([]*plan, error) {
	var errs []error
	plans := make([]*plan, 0, len(inputs))
	for _, in := range inputs {
		p := &plan{input: in, path: in}
		if in == stdio {
			tmp, err := os.CreateTemp("", "convsvc-stdin-*")
			if err != nil {
				return nil, fmt.Errorf("standard input: %w", err)
			}
			cleanup(func() { os.Remove(tmp.Name()) })
			n, err := io.Copy(tmp, cmd.InOrStdin())
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, fmt.Errorf("standard input: %w", err)
			}
			p.path, p.size = tmp.Name(), n
			if n == 0 {
				errs = append(errs, errors.New("standard input is empty: there is nothing to convert"))
			}
			plans = append(plans, p)
			continue
		}
		f, err := os.Open(in)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				err = fmt.Errorf("%s: no such file", in)
			} else if errors.Is(err, fs.ErrPermission) {
				err = fmt.Errorf("%s: cannot read it (permission denied)", in)
			}
			errs = append(errs, err)
			continue
		}
		st, err := f.Stat()
		f.Close()
		switch {
		case err != nil:
			errs = append(errs, err)
		case st.IsDir():
			errs = append(errs, fmt.Errorf("%s is a directory; give the files in it", in))
		case !st.Mode().IsRegular():
			errs = append(errs, fmt.Errorf("%s is not a regular file", in))
		case st.Size() == 0:
			errs = append(errs, fmt.Errorf("%s is empty (0 bytes): there is nothing to convert", in))
		default:
			p.size = st.Size()
			plans = append(plans, p)
		}
	}
	return plans, errors.Join(errs...)
}

// check resolves the target, each input's format and output, and refuses, before any job is
// reserved, what would fail later: an unknown format, a pair that does not convert, options
// the target or input does not take, a missing or read-only output directory, two inputs with
// one output, and an output that exists (without --force).
func (o *convertOptions) check(ctx context.Context, c *client.Client, plans []*plan) (client.Format, error) {
	formats, err := c.Formats(ctx)
	if err != nil {
		return client.Format{}, reachable(fmt.Errorf("list formats: %w", err), o.server)
	}
	target, ok := findFormat(formats, o.to)
	if !ok {
		return client.Format{}, unknownFormat(formats, "unknown target format %q", o.to)
	}
	detail, err := c.Format(ctx, target.ID)
	if err != nil {
		return target, fmt.Errorf("format %s: %w", target.ID, err)
	}
	opts := kernelOptions(o.opts)
	tf := convert.Format{ID: target.ID, Category: target.Category, Options: detail.Options}
	if err := opts.Validate(tf); err != nil {
		// the API's own words: options.quality: not accepted when converting to gif (...)
		return target, o.forInputs(ctx, c, formats, plans, opts, tf, err)
	}

	var errs []error
	sources := map[string]client.Format{}
	outputs := map[string]string{} // cleaned output path -> input
	inputs := map[string]string{}  // cleaned input path -> input
	for _, p := range plans {
		if p.input != stdio {
			inputs[absPath(p.input)] = p.input
		}
	}
	for _, p := range plans {
		from, err := o.inputFormat(formats, p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.from = from
		src, ok := sources[from]
		if !ok {
			if src, err = c.Format(ctx, from); err != nil {
				errs = append(errs, fmt.Errorf("%s: format %s: %w", p.input, from, err))
				continue
			}
			sources[from] = src
		}
		if from == target.ID && slices.Contains(src.Targets, target.ID) && len(opts.ChangingOptions()) == 0 {
			errs = append(errs, fmt.Errorf("%s: converting %s to %s changes nothing without an option; set one of: %s",
				p.input, from, target.ID, strings.Join(convert.SameFormatOptions(tf), ", ")))
			continue
		}
		if !slices.Contains(src.Targets, target.ID) {
			reach := "nothing"
			if len(src.Targets) > 0 {
				reach = strings.Join(src.Targets, ", ")
			}
			errs = append(errs, fmt.Errorf("%s: cannot convert %s to %s; %s converts to: %s", p.input, from, target.ID, from, reach))
			continue
		}
		if err := errors.Join(opts.ValidateInput(from), opts.ValidateSource(convert.Format{ID: from, Category: src.Category})); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.input, err))
			continue
		}
		p.out = o.output
		if p.out == "" {
			name := filepath.Base(p.input)
			if p.input == stdio {
				name = "stdin"
			}
			p.out = filepath.Join(o.outputDir, strings.TrimSuffix(name, filepath.Ext(name))+"."+outputExtension(target, opts))
		}
		if p.out == stdio {
			continue
		}
		key := absPath(p.out)
		if in, ok := inputs[key]; ok {
			// Even with --force: the input may still be being read.
			errs = append(errs, fmt.Errorf("%s: its output %s is the input %s; choose another with -o or --output-dir", p.input, p.out, in))
			continue
		}
		if err := outputContradicts(formats, target, o.output); err != nil {
			errs = append(errs, err)
			continue
		}
		if other, dup := outputs[key]; dup {
			errs = append(errs, fmt.Errorf("%s and %s would both be written to %s; convert them in separate runs with --output-dir or -o", other, p.input, p.out))
			continue
		}
		outputs[key] = p.input
		if err := checkOutput(p.out, o.force); err != nil {
			errs = append(errs, err)
		}
	}
	return target, errors.Join(errs...)
}

// absPath is path made absolute and clean, to compare paths written differently.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return filepath.Clean(path)
}

// inputFormat is --from, else the format of the file's extension, else (standard input, or a
// file without a known extension) the format its first bytes show.
func (o *convertOptions) inputFormat(formats []client.Format, p *plan) (string, error) {
	if o.from != "" {
		f, ok := findFormat(formats, o.from)
		if !ok {
			return "", unknownFormat(formats, "unknown input format %q (--from)", o.from)
		}
		return f.ID, nil
	}
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(p.input)), ".")
	head := readHead(p.path)
	if p.input != stdio && ext != "" {
		if f, ok := formatByExtension(formats, ext); ok {
			if actual, ok := contentContradicts(formats, f, head); ok {
				// A file whose extension lies (a JPEG named .png) would be reserved, uploaded
				// and then fail: it is converted as what it is, and the user is told.
				p.notice = fmt.Sprintf("%s holds a %s, not a %s as its extension says: converting it as %s (pass --from to choose)", p.input, actual.Name, f.Name, actual.ID)
				return actual.ID, nil
			}
			return f.ID, nil
		}
	}
	if f, ok := sniff(formats, head); ok {
		return f.ID, nil
	}
	if p.input == stdio {
		return "", errors.New("cannot tell the format of standard input from its content; pass --from")
	}
	return "", fmt.Errorf("%s: cannot tell the format from extension %q; pass --from", p.input, ext)
}

// readHead is the first convert.SniffLen bytes of the file at path (fewer, or none, when it is
// shorter or cannot be read: the upload reports that).
func readHead(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	head := make([]byte, convert.SniffLen)
	n, _ := io.ReadFull(f, head)
	return head[:n]
}

// sniff recognises content by its first bytes: convert.Sniff (the server's own signatures),
// else http.DetectContentType and the formats' MIME types.
func sniff(formats []client.Format, head []byte) (client.Format, bool) {
	if id, _ := convert.Sniff(head); id != "" {
		if f, ok := findFormat(formats, id); ok {
			return f, true
		}
	}
	mime, _, _ := strings.Cut(http.DetectContentType(head), ";")
	if mime == "application/octet-stream" || strings.HasPrefix(mime, "text/plain") {
		return client.Format{}, false
	}
	for _, fm := range formats {
		if fm.MIME == mime {
			return fm, true
		}
	}
	return client.Format{}, false
}

// contentContradicts reports the format a file's content shows when its extension's format f
// says otherwise: a binary signature of another format of ours (convert.Sniff). Text is never
// a contradiction (Markdown may begin like HTML), nor is a ZIP signature for a format kept in
// a ZIP container (DOCX, XLSX, EPUB), which the signature cannot tell apart.
func contentContradicts(formats []client.Format, f client.Format, head []byte) (client.Format, bool) {
	if len(head) == 0 || convert.LooksLikeText(head) {
		return client.Format{}, false
	}
	id, _ := convert.Sniff(head)
	if id == "" || id == f.ID || (id == "zip" && zipContainer(f)) {
		return client.Format{}, false
	}
	actual, ok := findFormat(formats, id)
	return actual, ok
}

// zipContainer reports whether files of f are ZIP archives inside (by its MIME type).
func zipContainer(f client.Format) bool {
	return strings.Contains(f.MIME, "zip") || strings.Contains(f.MIME, "openxmlformats") || strings.Contains(f.MIME, "opendocument")
}

// outputContradicts refuses an -o whose extension names another format than the target
// (-o out.png --to jpeg would write JPEG bytes under .png). An output without an extension,
// or with one no format claims, is taken as given.
func outputContradicts(formats []client.Format, target client.Format, out string) error {
	if out == "" || out == stdio {
		return nil
	}
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(out)), ".")
	if ext == "" {
		return nil
	}
	named, ok := formatByExtension(formats, ext)
	if !ok || named.ID == target.ID || slices.Contains(target.Extensions, ext) {
		return nil
	}
	return fmt.Errorf("-o %s: .%s is the extension of %s, but --to %s writes %s; name the output %s, or pass --to %s",
		out, ext, named.Name, target.ID, target.Name, strings.TrimSuffix(out, filepath.Ext(out))+"."+firstExtension(target), named.ID)
}

// checkOutput refuses an output that exists (unless force) or whose directory is missing or
// not writable.
func checkOutput(out string, force bool) error {
	if st, err := os.Stat(out); err == nil {
		if st.IsDir() {
			return fmt.Errorf("%s is a directory; -o names the output file (use --output-dir for a directory)", out)
		}
		if !force {
			return fmt.Errorf("%s already exists; pass --force to overwrite it", out)
		}
	}
	dir := filepath.Dir(out)
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("output directory %s does not exist; create it first (mkdir -p %s)", dir, dir)
	} else if err != nil {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("output directory %s is not a directory", dir)
	}
	probe, err := os.CreateTemp(dir, ".convsvc-probe-*")
	if err != nil {
		return fmt.Errorf("cannot write to output directory %s: %w", dir, errors.Unwrap(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// embeddedNoLimit is the embedded server's rate limit per key and minute: past anything one
// user's convert sends (the limiter's memory grows with the requests it sees, not the limit).
const embeddedNoLimit = 1 << 30

// startEmbedded runs a whole convsvc in a temporary data dir on loopback ports; the returned
// function stops it and removes the dir.
func (o *convertOptions) startEmbedded(logTo io.Writer) (func(), error) {
	dir, err := os.MkdirTemp("", "convsvc-convert-*")
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if o.verbose {
		log = slog.New(slog.NewTextHandler(logTo, nil))
	}
	standard.SetFontDir(o.fontDir)
	var key string
	m, err := service.Run(service.Config{
		DataDir:      dir,
		Listen:       "127.0.0.1:0",
		BlobListen:   "127.0.0.1:0",
		Logger:       log,
		OnDefaultKey: func(_, k string) { key = k },
		// The user's own process, with the user's own network: --source-url and --deliver-to
		// may name files on this machine or the local network.
		FetchAllowPrivate: true,
		// The user's own process: its key is the user's alone, so it is not rate-limited.
		WriteLimit: embeddedNoLimit,
		ReadLimit:  embeddedNoLimit,
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start embedded server: %w", err)
	}
	o.server, o.key = m.URL(), key
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m.Shutdown(ctx)
		os.RemoveAll(dir)
	}, nil
}

// convertOne runs reserve, upload, start, wait and download for one checked file. The job it
// returns has an ID once reserved, so that the caller can cancel it when err is not nil.
func (o *convertOptions) convertOne(ctx context.Context, c *client.Client, target client.Format, p *plan, stdout io.Writer, prog *progress, fp *fileProgress) (client.Job, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	f, err := os.Open(p.path)
	if err != nil {
		return client.Job{}, err
	}
	defer f.Close()
	prog.state(fp, "reserving")
	req := client.CreateJobRequest{InputFormat: p.from, TargetFormat: target.ID, InputBytes: p.size, Preset: o.preset, DeliverTo: o.deliver}
	if !o.opts.IsZero() {
		req.Options = &o.opts
	}
	if o.noCache {
		req.Cache = new(bool)
	} else if req.DeliverTo == nil {
		// A file converted before the same way is answered from the server's cache, unsent.
		if req.InputSHA256, err = client.FileSHA256(f); err != nil {
			return client.Job{}, err
		}
	}
	idem := randomToken()
	res, err := c.CreateJob(ctx, req, idem)
	if err != nil {
		if ctx.Err() != nil {
			// Interrupted during the create: the server may have reserved the job without the
			// answer arriving. The same Idempotency-Key returns that job (or reserves one), so
			// that the caller can cancel it rather than leave it holding its reservation.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if again, aerr := c.CreateJob(actx, req, idem); aerr == nil {
				return again.Job, err
			}
		}
		return client.Job{}, err
	}
	job := res.Job
	started := job
	if job.Status == client.StatusCreated { // else answered from the conversion cache
		prog.transfer(fp, "upload", 0, p.size)
		// The file itself, not a wrapper of it: the client then sends it again when object storage
		// answers 503 too_many_connections (or 429, 502) or the connection fails before an answer.
		if err := c.UploadWithProgress(ctx, res.UploadURL, f, p.size, func(done, total int64) { prog.transfer(fp, "upload", done, total) }); err != nil {
			return job, err
		}
		if started, err = c.StartJob(ctx, job.ID); err != nil {
			return job, err
		}
	}
	prog.state(fp, string(started.Status))
	job, err = c.WaitJob(ctx, job.ID, func(j client.Job) { prog.state(fp, jobPhase(j)) })
	if err != nil {
		if job.ID == "" {
			job = started
		}
		return job, err
	}
	if job.Status != client.StatusSucceeded || job.Output == nil {
		return job, fmt.Errorf("job %s %s", job.ID, job.Error())
	}
	prog.transfer(fp, "download", 0, job.Output.Bytes)
	progress := func(done, total int64) { prog.transfer(fp, "download", done, total) }
	if p.out == stdio {
		_, err = c.DownloadTo(ctx, *job.Output, &client.ProgressWriter{W: stdout, Total: job.Output.Bytes, Progress: progress})
		return job, err
	}
	return job, o.download(ctx, c, job, p.out, progress)
}

// download writes the output next to out and moves it into place: with --force by rename (an
// existing file is replaced), else by hard link, which fails rather than replace a file that
// appeared while the job ran.
func (o *convertOptions) download(ctx context.Context, c *client.Client, job client.Job, out string, progress func(done, total int64)) error {
	if o.force {
		return c.DownloadWithProgress(ctx, *job.Output, out, progress)
	}
	tmp := filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+"."+randomToken()[:8]+".part")
	defer os.Remove(tmp)
	if err := c.DownloadWithProgress(ctx, *job.Output, tmp, progress); err != nil {
		return err
	}
	return placeFile(tmp, out, false)
}

func findFormat(formats []client.Format, id string) (client.Format, bool) {
	for _, f := range formats {
		if f.ID == id {
			return f, true
		}
	}
	// Accept an extension too (--to jpg).
	return formatByExtension(formats, strings.TrimPrefix(strings.ToLower(id), "."))
}

// unknownFormat says that name (in the words of what, a format with one %q) is no format,
// naming the format ids within two edits of it.
func unknownFormat(formats []client.Format, what, name string) error {
	lower := strings.ToLower(strings.TrimPrefix(name, "."))
	var near []string
	for _, f := range formats {
		if len(f.ID) > 2 && levenshtein(lower, f.ID) <= 2 {
			near = append(near, f.ID)
		}
	}
	if len(near) == 0 {
		return fmt.Errorf(what+"; `convsvc formats` lists them", name)
	}
	return fmt.Errorf(what+"; did you mean %s? (`convsvc formats` lists them)", name, strings.Join(near, " or "))
}

func formatByExtension(formats []client.Format, ext string) (client.Format, bool) {
	for _, f := range formats {
		if f.ID == ext {
			return f, true
		}
	}
	for _, f := range formats {
		for _, e := range f.Extensions {
			if e == ext {
				return f, true
			}
		}
	}
	return client.Format{}, false
}

// outputExtension is the extension of the file a job writes: zip when the pages option may
// select several pages of an image target that holds one (TIFF and PDF hold them all), as
// convert.Catalog.OutputFormat decides on the server.
func outputExtension(target client.Format, opts convert.Options) string {
	if opts.Pages != "" && target.Category == convert.CategoryImage && target.ID != "tiff" {
		if spec, err := convert.ParsePages(opts.Pages); err == nil && !spec.Single() {
			return "zip"
		}
	}
	return firstExtension(target)
}

// kernelOptions is the client's options as the converters' options, to check them locally.
func kernelOptions(o client.Options) convert.Options {
	opts := convert.Options{Quality: o.Quality, Width: o.Width, Height: o.Height, Fit: o.Fit, Page: o.Page, DPI: o.DPI,
		Lossless: o.Lossless, Sheet: o.Sheet, Pages: o.Pages,
		Rotate: o.Rotate, Flip: o.Flip, Background: o.Background,
		AutoOrient: o.AutoOrient, StripMetadata: o.StripMetadata, MaxBytes: o.MaxBytes}
	if c := o.Crop; c != nil {
		opts.Crop = &convert.Crop{Left: c.Left, Top: c.Top, Width: c.Width, Height: c.Height}
	}
	return opts
}

// convertOptionsSet names the option flags that are set.
func convertOptionsSet(o client.Options) []string { return kernelOptions(o).Names() }

func firstExtension(f client.Format) string {
	if len(f.Extensions) > 0 {
		return f.Extensions[0]
	}
	return f.ID
}

// rateNotice tells stderr that convert waits out the API's rate limit: "convsvc: rate limited:
// waiting 23 s ...". Files in flight hit the limit together and each 429 names a slightly later
// end, so one line stands for a wait until a new one ends 5 s past it or 10 s have gone by.
type rateNotice struct {
	mu    sync.Mutex
	w     io.Writer
	now   func() time.Time
	until time.Time // end of the last announced wait
	at    time.Time // when it was announced
}

// retry is a client.Client OnRetry: it announces 429 waits.
func (n *rateNotice) retry(wait time.Duration, err *client.APIError) {
	if err.Status != http.StatusTooManyRequests {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.now()
	end := now.Add(wait)
	if !n.at.IsZero() && end.Before(n.until.Add(5*time.Second)) && now.Sub(n.at) < 10*time.Second {
		return
	}
	n.until, n.at = end, now
	fmt.Fprintf(n.w, "convsvc: rate limited: waiting %d s (the server's Retry-After), then carrying on\n", ceilSeconds(wait))
}

// ceilSeconds is d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// fontDirDefault is $CONVSVC_FONT_DIR when set, else the standard font directory.
func fontDirDefault() string {
	if v, ok := os.LookupEnv("CONVSVC_FONT_DIR"); ok {
		return v
	}
	return standard.DefaultFontDir
}

// transformFlags sets the options of --crop, --no-auto-orient, --keep-metadata and
// --max-bytes; the API checks the values (rotate 45, a bad colour) with its own words.
func (o *convertOptions) transformFlags(cmd *cobra.Command) error {
	if o.crop != "" {
		parts := strings.Split(o.crop, ",")
		var n [4]int
		ok := len(parts) == 4
		for i := 0; ok && i < 4; i++ {
			v, err := strconv.Atoi(strings.TrimSpace(parts[i]))
			n[i], ok = v, err == nil
		}
		if !ok {
			return fmt.Errorf("--crop %q: want LEFT,TOP,WIDTH,HEIGHT in pixels, like 10,20,300,200", o.crop)
		}
		o.opts.Crop = &client.Crop{Left: n[0], Top: n[1], Width: n[2], Height: n[3]}
	}
	if o.noAutoOrient {
		f := false
		o.opts.AutoOrient = &f
	}
	if o.keepMetadata {
		f := false
		o.opts.StripMetadata = &f
	}
	if cmd.Flags().Changed("max-bytes") {
		if o.maxBytes <= 0 {
			return fmt.Errorf("--max-bytes: want a size of at least 1 byte, like 200KB")
		}
		o.opts.MaxBytes = int64(o.maxBytes)
	}
	return nil
}
