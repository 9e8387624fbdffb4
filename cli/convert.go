package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/convsvc/convsvc/client"
	"github.com/convsvc/convsvc/service"
)

// convertOptions are the flags of convert.
type convertOptions struct {
	to        string
	from      string
	output    string
	outputDir string
	server    string
	key       string
	jsonOut   bool
	parallel  int
	timeout   time.Duration
	verbose   bool
}

// maxParallel bounds convert --parallel: files in flight at once, each with its own upload.
const maxParallel = 256

func newConvertCommand() *cobra.Command {
	var o convertOptions
	cmd := &cobra.Command{
		Use:   "convert INPUT... --to FORMAT [-o OUTPUT]",
		Short: "Convert files through the API (an embedded server when --server is not set)",
		Long: "Convert files through the whole API flow: reserve a job, upload to the signed URL,\n" +
			"start, wait, download. Without --server it starts an embedded convsvc in a temporary\n" +
			"data dir, in-process, and still goes through real HTTP.",
		Example: "  convsvc convert photo.png --to jpeg\n  convsvc convert *.png --to gif --output-dir out/\n" +
			"  CONVSVC_URL=http://127.0.0.1:8080 CONVSVC_KEY=cs_live_... convsvc convert scan.tiff --to png -o scan.png",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	f := cmd.Flags()
	f.StringVar(&o.to, "to", "", "target format id (see convsvc formats)")
	f.StringVar(&o.from, "from", "", "input format id (default: from the file extension)")
	f.StringVarP(&o.output, "output", "o", "", "output file (one input only; default: INPUT's name with the target's extension, in the current directory)")
	f.StringVar(&o.outputDir, "output-dir", "", "directory for outputs (default: current directory)")
	f.StringVar(&o.server, "server", "", "API base URL of a running convsvc (default: an embedded one) [$CONVSVC_URL]")
	f.StringVar(&o.key, "key", "", "API key for --server [$CONVSVC_KEY, $CONVSVC_KEY_FILE, $CONVSVC_API_KEY]")
	f.BoolVar(&o.jsonOut, "json", false, "print each final Job as JSON")
	f.IntVar(&o.parallel, "parallel", 4, "files converted at once")
	f.DurationVar(&o.timeout, "timeout", 15*time.Minute, "give up on a file after this long")
	f.BoolVar(&o.verbose, "verbose", false, "show the embedded server's log")
	cmd.MarkFlagRequired("to")
	return cmd
}

func (o *convertOptions) run(cmd *cobra.Command, inputs []string) error {
	if o.server == "" {
		o.server = os.Getenv("CONVSVC_URL")
	}
	if o.key == "" {
		o.key = firstEnv("CONVSVC_KEY", "CONVSVC_API_KEY")
	}
	if o.output != "" && len(inputs) > 1 {
		return errors.New("-o names one output; with several inputs use --output-dir")
	}
	switch {
	case o.parallel < 1 || o.parallel > maxParallel:
		return fmt.Errorf("--parallel is %d: use 1 to %d", o.parallel, maxParallel)
	case o.timeout <= 0:
		return fmt.Errorf("--timeout is %s: use a duration above 0, like 15m", o.timeout)
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	if o.server == "" {
		stopEmbedded, err := o.startEmbedded(cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		defer stopEmbedded()
	} else if o.key == "" {
		return errors.New("--server needs an API key: pass --key or set CONVSVC_API_KEY")
	}
	c := &client.Client{BaseURL: o.server, Key: o.key}
	formats, err := c.Formats(ctx)
	if err != nil {
		return fmt.Errorf("list formats: %w", err)
	}
	target, ok := findFormat(formats, o.to)
	if !ok {
		return fmt.Errorf("unknown target format %q; run convsvc formats", o.to)
	}

	// On a terminal, one line shows transfers and job states; otherwise stdout carries exactly
	// one summary line (or JSON Job) per converted file.
	prog := newProgress(cmd.OutOrStdout())
	defer prog.close()
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, max(1, o.parallel))
	var wg sync.WaitGroup
	files := make([]*fileProgress, len(inputs))
	for i, in := range inputs {
		files[i] = prog.add(in)
	}
	for i, in := range inputs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			job, out, err := o.convertOne(ctx, c, formats, target, in, prog, files[i])
			if err != nil {
				prog.finish(files[i], "")
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %s", in, describe(err)))
				mu.Unlock()
				return
			}
			line := fmt.Sprintf("%s -> %s (%d bytes, %s)", in, out, job.Output.Bytes, job.ID)
			if o.jsonOut {
				b, _ := json.Marshal(job)
				line = string(b)
			}
			prog.finish(files[i], line)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startEmbedded runs a whole convsvc in a temporary data dir on loopback ports.
func (o *convertOptions) startEmbedded(logTo io.Writer) (func(), error) {
	dir, err := os.MkdirTemp("", "convsvc-convert-*")
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if o.verbose {
		log = slog.New(slog.NewTextHandler(logTo, nil))
	}
	var key string
	m, err := service.Run(service.Config{
		DataDir:      dir,
		Listen:       "127.0.0.1:0",
		BlobListen:   "127.0.0.1:0",
		Logger:       log,
		OnDefaultKey: func(_, k string) { key = k },
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

// convertOne runs reserve, upload, start, wait and download for one file.
func (o *convertOptions) convertOne(ctx context.Context, c *client.Client, formats []client.Format, target client.Format, in string, prog *progress, fp *fileProgress) (client.Job, string, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	f, err := os.Open(in)
	if err != nil {
		return client.Job{}, "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return client.Job{}, "", err
	}
	if !st.Mode().IsRegular() {
		return client.Job{}, "", errors.New("not a regular file")
	}
	from := o.from
	if from == "" {
		ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(in)), ".")
		fm, ok := formatByExtension(formats, ext)
		if !ok {
			return client.Job{}, "", fmt.Errorf("cannot tell the format from extension %q; pass --from", ext)
		}
		from = fm.ID
	}
	out := o.output
	if out == "" {
		base := strings.TrimSuffix(filepath.Base(in), filepath.Ext(in)) + "." + firstExtension(target)
		out = filepath.Join(o.outputDir, base)
	}
	prog.state(fp, "reserving")
	res, err := c.CreateJob(ctx, client.CreateJobRequest{InputFormat: from, TargetFormat: target.ID, InputBytes: st.Size()}, randomToken())
	if err != nil {
		return client.Job{}, "", err
	}
	prog.transfer(fp, "upload", 0, st.Size())
	body := &client.ProgressReader{R: f, Total: st.Size(), Progress: func(done, total int64) { prog.transfer(fp, "upload", done, total) }}
	if err := c.Upload(ctx, res.UploadURL, body, st.Size()); err != nil {
		return client.Job{}, "", err
	}
	started, err := c.StartJob(ctx, res.Job.ID)
	if err != nil {
		return client.Job{}, "", err
	}
	prog.state(fp, started.Status)
	job, err := c.WaitJob(ctx, res.Job.ID, func(j client.Job) { prog.state(fp, j.Status) })
	if err != nil {
		return job, "", err
	}
	if job.Status != "succeeded" || job.Output == nil {
		return job, "", fmt.Errorf("job %s %s: %s: %s", job.ID, job.Status, deref(job.ErrorCode), deref(job.ErrorMessage))
	}
	prog.transfer(fp, "download", 0, job.Output.Bytes)
	err = c.DownloadWithProgress(ctx, *job.Output, out, func(done, total int64) { prog.transfer(fp, "download", done, total) })
	if err != nil {
		return job, "", err
	}
	return job, out, nil
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

func firstExtension(f client.Format) string {
	if len(f.Extensions) > 0 {
		return f.Extensions[0]
	}
	return f.ID
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
